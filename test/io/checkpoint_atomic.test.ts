/**
 * checkpoint.load is all-or-nothing (a damaged or mismatched checkpoint leaves the model,
 * optimizer, scheduler, scaler, sampler and RNG exactly as they were), and re-saving a step keeps
 * one complete folder for it at every moment, even when the process dies mid-save.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';
import { tsNode } from '../dist/harness';
import { tempDir } from './helpers';
import { rejection } from '../helpers/errors';

const { dir, cleanup } = tempDir('checkpoint-atomic');
test.after(cleanup);

async function hex(t: fl.Tensor): Promise<string> {
  const d = await t.data();
  return `${t.dtype}[${t.shape.join(',')}]:${Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString('hex')}`;
}

function world() {
  const model = new fl.nn.Sequential(new fl.nn.Linear(3, 4), new fl.nn.BatchNorm1d(4), new fl.nn.Linear(4, 2));
  const optimizer = new fl.optim.Adam(model.parameters(), { lr: 0.01 });
  const scheduler = new fl.optim.StepLR(optimizer, 2, 0.5);
  const sampler = new fl.DistributedSampler(20, { numReplicas: 1, rank: 0, seed: 3 });
  const scaler = new fl.amp.GradScaler({ initScale: 1024 });
  return { model, optimizer, scheduler, sampler, scaler };
}
type World = ReturnType<typeof world>;

function train(w: World, steps: number): void {
  w.model.train();
  for (let i = 0; i < steps; i++) {
    fl.tidy(() => {
      w.optimizer.zeroGrad();
      const out = w.model.forward(fl.randn([5, 3])) as fl.Tensor;
      out.square().mean().backward();
      w.optimizer.step();
      w.scheduler.step();
    });
  }
  const it = w.sampler[Symbol.iterator]();
  for (let i = 0; i < steps; i++) it.next();
}

/** Everything a load may change, with tensors as their bytes. */
async function snapshot(w: World): Promise<Record<string, unknown>> {
  const model: Record<string, string> = {};
  for (const [k, t] of Object.entries(w.model.stateDict())) model[k] = await hex(t);
  const params = w.optimizer.paramGroups.flatMap((g) => g.params);
  const optimizerState: Record<string, Record<string, string | number>> = {};
  for (const [p, s] of w.optimizer.state) {
    const entry: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(s)) entry[k] = typeof v === 'number' ? v : await hex(v);
    optimizerState[params.indexOf(p)] = entry;
  }
  return {
    model,
    optimizerState,
    groups: w.optimizer.paramGroups.map(({ params: _, ...h }) => h),
    scheduler: w.scheduler.stateDict(),
    scaler: w.scaler.stateDict(),
    sampler: w.sampler.stateDict(),
    samplerNextPass: w.sampler.length,
    rng: fl.getRngState(),
  };
}

const base = join(dir, 'base');
let atSave: Record<string, unknown>;

/** The run past its checkpoint: three steps, the save, two more, RNG draws and a scaler change. Made afresh for each case, so a case that fails cannot leave a changed state to the next. */
async function movedOn(save = false): Promise<World> {
  fl.manualSeed(5);
  const w = world();
  train(w, 3);
  if (save) {
    await fl.checkpoint.save(base, { ...w, step: 3 });
    atSave = await snapshot(w);
  }
  train(w, 2);
  fl.randn([7]);
  w.scaler.loadStateDict({ ...w.scaler.stateDict(), scale: 8, growthTracker: 5 });
  return w;
}

/** A copy of the good checkpoint, damaged by `damage(folder)`. */
function damaged(name: string, damage: (folder: string) => void): string {
  const folder = join(dir, 'damaged', name);
  cpSync(join(base, 'step-000000003'), folder, { recursive: true });
  damage(folder);
  return folder;
}

// biome-ignore lint/suspicious/noExplicitAny: edits parsed JSON of any shape, on purpose
function editManifest(edit: (m: Record<string, any>) => void): (folder: string) => void {
  return (folder) => {
    const file = join(folder, 'checkpoint.json');
    const m = JSON.parse(readFileSync(file, 'utf8'));
    edit(m);
    writeFileSync(file, JSON.stringify(m));
  };
}

function editTensors(file: string, edit: (t: Record<string, fl.Tensor>) => void): (folder: string) => void {
  return (folder) => {
    const t = fl.loadSync(join(folder, file));
    edit(t);
    fl.saveSync(t, join(folder, file));
  };
}

const cases: Array<[string, (folder: string) => void, string, RegExp[]]> = [
  ['rng-negative', editManifest((m) => (m.rng = { seed: -1, offset: 0 })), 'ERR_FORMAT', [/'rng'/, /checkpoint\.json/]],
  ['rng-missing', editManifest((m) => delete m.rng), 'ERR_FORMAT', [/'rng'/]],
  [
    'optimizer-tensor-missing',
    editTensors('optimizer.safetensors', (t) => delete t['state.5.expAvgSq']),
    'ERR_FORMAT',
    [/optimizer\.safetensors lacks 'state\.5\.expAvgSq'/],
  ],
  [
    'optimizer-tensor-shape',
    editTensors('optimizer.safetensors', (t) => (t['state.5.expAvg'] = fl.zeros([3]))),
    'ERR_STATE_DICT',
    [/optimizer state/, /'expAvg' of parameter 5/],
  ],
  [
    'optimizer-tensor-unlisted',
    editTensors('optimizer.safetensors', (t) => (t['state.5.bogus'] = fl.zeros([2]))),
    'ERR_FORMAT',
    [/'state\.5\.bogus'/, /does not list/],
  ],
  ['optimizer-hyper-unknown', editManifest((m) => (m.optimizer.paramGroups[0].foo = 1)), 'ERR_STATE_DICT', [/optimizer state/, /'foo'/]],
  [
    'optimizer-scalar-not-number',
    editManifest((m) => (m.optimizer.scalars['5'].step = 'x')),
    'ERR_FORMAT',
    [/optimizer\.scalars\.5\.step/],
  ],
  [
    'model-shape',
    editTensors('model.safetensors', (t) => (t['2.bias'] = fl.zeros([3]))),
    'ERR_STATE_DICT',
    [/model\.safetensors/, /'2\.bias'/],
  ],
  ['model-missing-key', editTensors('model.safetensors', (t) => delete t['2.bias']), 'ERR_STATE_DICT', [/missing keys: 2\.bias/]],
  [
    'model-dtype-kind',
    editTensors('model.safetensors', (t) => (t['1.num_batches_tracked'] = fl.zeros([], { dtype: 'f32' }))),
    'ERR_STATE_DICT',
    [/'1\.num_batches_tracked'/],
  ],
  ['model-file-truncated', (f) => writeFileSync(join(f, 'model.safetensors'), 'abc'), 'ERR_FORMAT', [/model\.safetensors/]],
  ['optimizer-file-truncated', (f) => writeFileSync(join(f, 'optimizer.safetensors'), 'abc'), 'ERR_FORMAT', [/optimizer\.safetensors/]],
  ['scheduler', editManifest((m) => (m.scheduler.bogus = 1)), 'ERR_STATE_DICT', [/scheduler state/, /'bogus'/]],
  ['scaler', editManifest((m) => (m.scaler.scale = -1)), 'ERR_STATE_DICT', [/scaler state/, /scale/]],
  // Refused last of the objects: scheduler, scaler and optimizer have loaded and must be undone.
  ['sampler', editManifest((m) => (m.sampler.seed = 4)), 'ERR_STATE_DICT', [/sampler state/, /seed/]],
];

test('setup: a checkpoint of a trained model, optimizer, scheduler, scaler and sampler; then the run moves on', async () => {
  const now = await snapshot(await movedOn(true));
  for (const k of Object.keys(now)) if (k !== 'samplerNextPass') assert.not.equal(now[k], atSave[k], `${k} moved on since the save`);
  assert.equal(await snapshot(await movedOn()), now, 'movedOn() is deterministic');
});

for (const [name, damage, code, mentions] of cases) {
  test(`a rejected load changes nothing: ${name}`, async () => {
    const folder = damaged(name, damage);
    const live = await movedOn();
    const before = await snapshot(live);
    const err = await rejection(fl.checkpoint.load(folder, { ...live }));
    assert.equal(await snapshot(live), before, `the state changed (then: ${err.message})`);
    assert.is(err.code, code, err.message);
    for (const re of mentions) assert.match(err.message, re);
  });
}

test('the undamaged checkpoint then loads: everything comes back as saved', async () => {
  const live = await movedOn();
  const before = await snapshot(live);
  const info = await fl.checkpoint.load(base, { ...live });
  assert.is(info.step, 3);
  const after = await snapshot(live);
  assert.not.equal(after, before);
  for (const k of ['model', 'optimizerState', 'groups', 'scheduler', 'scaler', 'sampler', 'rng']) assert.equal(after[k], atSave[k], k);
});

test('Module.loadStateDict checks its own tensors first: a disposed one fails before any write', async () => {
  const m = new fl.nn.Sequential(new fl.nn.Linear(3, 4), new fl.nn.BatchNorm1d(4));
  const other = new fl.nn.Sequential(new fl.nn.Linear(3, 4), new fl.nn.BatchNorm1d(4));
  const keys = Object.keys(m.stateDict());
  const last = keys[keys.length - 1];
  m.stateDict()[last].dispose();
  const before: Record<string, string> = {};
  for (const k of keys.slice(0, -1)) before[k] = await hex(m.stateDict()[k]);
  throwsCode(() => m.loadStateDict(other.stateDict()), 'ERR_DISPOSED');
  for (const k of keys.slice(0, -1)) assert.is(await hex(m.stateDict()[k]), before[k], k);
});

test('re-saving a step replaces it and leaves no other folder', async () => {
  const d = join(dir, 'resave');
  const model = new fl.nn.Linear(3, 2);
  fl.noGrad(() => model.weight.fill_(1));
  await fl.checkpoint.save(d, { model, step: 4 });
  fl.noGrad(() => model.weight.fill_(2));
  await fl.checkpoint.save(d, { model, step: 4 });
  assert.equal(readdirSync(d), ['step-000000004']);
  const fresh = new fl.nn.Linear(3, 2);
  await fl.checkpoint.load(d, { model: fresh });
  assert.equal(fresh.weight.toArray(), model.weight.toArray());
});

/** Runs workers/crash_resave.ts, which dies by SIGKILL at its k-th rename or rm of the re-save; 'finished' when k is past the last. */
function crashResave(folder: string, k: number): Promise<'killed' | 'finished'> {
  const child = spawn(tsNode[0], [...tsNode.slice(1), join(__dirname, 'workers', 'crash_resave.ts'), folder, String(k)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return new Promise((resolve, reject) =>
    child.on('close', (code, signal) => {
      if (signal === 'SIGKILL' && out.includes('re-saving')) resolve('killed');
      else if (code === 0 && out.includes('finished')) resolve('finished');
      else reject(new Error(`crash_resave.ts ${k} exited ${code ?? signal}: ${out}`));
    }),
  );
}

async function weightOf(path: string): Promise<number[]> {
  const model = new fl.nn.Linear(3, 2);
  const info = await fl.checkpoint.load(path, { model });
  assert.is(info.step, 4);
  return [...new Set((model.weight.toArray() as number[][]).flat())];
}

test('a process killed at any point of re-saving a step leaves a complete checkpoint of that step', async () => {
  let kills = 0;
  for (let k = 1; ; k++) {
    const folder = join(dir, `crash-${k}`);
    mkdirSync(folder);
    const how = await crashResave(folder, k);
    if (how === 'finished') break;
    kills++;
    const latest = await fl.checkpoint.latest(folder);
    assert.ok(latest && /step-000000004(\.old)?$/.test(latest), `killed at ${k}: latest is ${latest}`);
    const w = await weightOf(folder);
    assert.ok(w.length === 1 && (w[0] === 1 || w[0] === 2), `killed at ${k}: weights ${w}`);
    // The folder save() returned also loads, and the next save's clean-up keeps the step.
    assert.equal(await weightOf(join(folder, 'step-000000004')), w);
    await fl.checkpoint.save(folder, { model: new fl.nn.Linear(3, 2), step: 5 });
    assert.equal(await weightOf(join(folder, 'step-000000004')), w);
    assert.equal(
      readdirSync(folder).filter((n) => n.includes('.tmp-')),
      [],
      'dead writers are cleaned up',
    );
    // Re-saving the step again ends with the plain layout.
    const model = new fl.nn.Linear(3, 2);
    fl.noGrad(() => model.weight.fill_(3));
    await fl.checkpoint.save(folder, { model, step: 4 });
    assert.equal(readdirSync(folder).sort(), ['step-000000003', 'step-000000004', 'step-000000005']);
    assert.equal(await weightOf(join(folder, 'step-000000004')), [3]);
  }
  assert.ok(kills >= 4, `the re-save was killed at ${kills} points`);
});

test('keepLast removes a step held only as step-<n>.old, and a stale .old beside a complete step', async () => {
  const d = join(dir, 'old-prune');
  const model = new fl.nn.Linear(3, 2);
  for (const step of [1, 2]) await fl.checkpoint.save(d, { model, step });
  const { renameSync } = await import('node:fs');
  renameSync(join(d, 'step-000000001'), join(d, 'step-000000001.old'));
  cpSync(join(d, 'step-000000002'), join(d, 'step-000000002.old'), { recursive: true });
  assert.ok((await fl.checkpoint.latest(d))!.endsWith('step-000000002'), 'a complete step-N wins over its .old');
  await fl.checkpoint.save(d, { model, step: 3, keepLast: 2 });
  assert.equal(readdirSync(d).sort(), ['step-000000002', 'step-000000003']);
});

test.run();
