import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';
import { tsNode } from '../dist/harness';
import { sameTensor, tempDir } from './helpers';

const { dir, cleanup } = tempDir('checkpoint');
test.after(cleanup);

function worker(...args: string[]): void {
  const r = spawnSync(tsNode[0], [...tsNode.slice(1), join(__dirname, 'workers', 'resume.ts'), ...args], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.is(r.status, 0, `resume.ts ${args.join(' ')}:\n${r.stdout}${r.stderr}`);
}

async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e) => e,
  );
}

test('train 2N steps in one process = train N, checkpoint, new process, load, train from nextStep (bit for bit; the README loop)', async () => {
  const N = '12'; // 8 batches per epoch: the checkpoint falls mid-epoch, after an lr step
  worker('full', dir, N);
  worker('first', dir, N);
  worker('second', dir, N);
  const full = await fl.load(join(dir, 'final-full.safetensors'));
  const resumed = await fl.load(join(dir, 'final-resumed.safetensors'));
  assert.equal(Object.keys(resumed), Object.keys(full));
  for (const k of Object.keys(full)) sameTensor(resumed[k], full[k], k);
  assert.ok(readFileSync(join(dir, 'final-full.safetensors')).equals(readFileSync(join(dir, 'final-resumed.safetensors'))));
  // The checkpoint holds step 11 (steps 0 … 11 ran); load() says step 12 runs next.
  const manifest = JSON.parse(readFileSync(join(dir, 'ckpt', 'step-000000011', 'checkpoint.json'), 'utf8'));
  assert.is(manifest.step, 11);
  const info = await fl.checkpoint.load(join(dir, 'ckpt'));
  assert.equal([info.step, info.nextStep], [11, 12]);
  assert.equal(manifest.sampler, { epoch: 1, position: 32, numReplicas: 1, seed: 7, shuffle: true, dropLast: false, datasetLength: 64 });
  assert.is(manifest.scheduler.lastEpoch, 12);
  assert.equal(manifest.extra, { note: 'resume test' });
  assert.is(Object.keys(manifest.optimizer.scalars).length, 4);
});

test('the checkpoint layout: model and optimizer tensors in safetensors, PyTorch names', async () => {
  const path = join(dir, 'ckpt', 'step-000000011');
  const model = await fl.io.inspect(join(path, 'model.safetensors'));
  assert.equal(model.tensors.map((t) => t.name).sort(), ['0.bias', '0.weight', '3.bias', '3.weight']);
  assert.is(model.metadata.format, 'pt');
  const optim = await fl.io.inspect(join(path, 'optimizer.safetensors'));
  assert.ok(optim.tensors.some((t) => t.name === 'state.0.expAvg'));
});

test('keepLast rotation, latest, re-saving a step, and rejected arguments', async () => {
  const d = join(dir, 'rot');
  const model = new fl.nn.Linear(3, 2);
  assert.is(await fl.checkpoint.latest(d), null);
  for (const step of [1, 2, 3, 4]) await fl.checkpoint.save(d, { model, step, keepLast: 2 });
  assert.equal(readdirSync(d).sort(), ['step-000000003', 'step-000000004']);
  assert.ok((await fl.checkpoint.latest(d))!.endsWith('step-000000004'));
  fl.noGrad(() => model.weight.copy_(fl.full([2, 3], 5)));
  await fl.checkpoint.save(d, { model, step: 4, extra: { again: true } });
  const fresh = new fl.nn.Linear(3, 2);
  const info = await fl.checkpoint.load(d, { model: fresh });
  assert.equal([info.step, info.nextStep, info.extra], [4, 5, { again: true }]);
  sameTensor(fresh.weight, model.weight);
  const other = await fl.checkpoint.load(join(d, 'step-000000003'), { model: fresh });
  assert.is(other.step, 3);

  assert.is((await rejection(fl.checkpoint.save(d, { model, step: -1 }))).code, 'ERR_ARG');
  assert.is((await rejection(fl.checkpoint.save(d, { model, step: 1, keepLast: 0 }))).code, 'ERR_ARG');
  assert.is((await rejection(fl.checkpoint.save(d, { model, step: 1, scaler: {} as never }))).code, 'ERR_ARG');
  assert.is((await rejection(fl.checkpoint.save(d, { model, step: 1, modle: model } as never))).code, 'ERR_ARG');
  assert.is((await rejection(fl.checkpoint.load(join(dir, 'nothing-here'), { model }))).code, 'ERR_NOT_FOUND');
  assert.is(
    (await rejection(fl.checkpoint.load(d, { model, scheduler: new fl.optim.StepLR(new fl.optim.SGD(model.parameters(), { lr: 1 }), 2) })))
      .code,
    'ERR_STATE_DICT',
  );
});

test('a scaler with stateDict/loadStateDict is saved and restored; the RNG state comes back', async () => {
  const d = join(dir, 'scaler');
  let restored: unknown = null;
  const scaler = {
    stateDict: () => ({ scale: 1024, growthTracker: 3 }),
    loadStateDict: (s: unknown) => {
      restored = s;
    },
  };
  fl.manualSeed(11);
  fl.randn([10]);
  const before = fl.getRngState();
  await fl.checkpoint.save(d, { scaler, step: 7 });
  fl.manualSeed(99);
  await fl.checkpoint.load(d, { scaler });
  assert.equal(restored, { scale: 1024, growthTracker: 3 });
  assert.equal(fl.getRngState(), before);
});

test('scheduler and sampler state dicts round-trip exactly', () => {
  const p = fl.ones([2]).requiresGrad_();
  const mk = () => {
    const opt = new fl.optim.SGD([p], { lr: 0.1 });
    return [opt, new fl.optim.CosineAnnealingLR(opt, 10, 0.001)] as const;
  };
  const [optA, a] = mk();
  for (let i = 0; i < 4; i++) a.step();
  const [optB, b] = mk();
  optB.loadStateDict(optA.stateDict());
  b.loadStateDict(JSON.parse(JSON.stringify(a.stateDict())));
  assert.equal(b.stateDict(), a.stateDict());
  for (let i = 0; i < 5; i++) {
    a.step();
    b.step();
    assert.is(b.getLastLr()[0], a.getLastLr()[0]);
  }
  throwsCode(() => b.loadStateDict({ lastEpoch: 1, stepSize: 3 } as never), 'ERR_STATE_DICT');

  const s = new fl.DistributedSampler(20, { numReplicas: 2, rank: 1, seed: 3 });
  s.setEpoch(2);
  const all = [...s];
  const it = s[Symbol.iterator]();
  for (let i = 0; i < 4; i++) it.next();
  const state = s.stateDict();
  assert.equal([state.epoch, state.position], [2, 4]);
  const r = new fl.DistributedSampler(20, { numReplicas: 2, rank: 1, seed: 3 });
  r.loadStateDict(state);
  assert.is(r.length, all.length - 4);
  assert.equal([...r], all.slice(4));
  assert.equal([...r], all, 'the pass after a resumed one is whole');
  throwsCode(() => r.loadStateDict({ ...state, seed: 4 }), 'ERR_STATE_DICT');
});

test.run();
