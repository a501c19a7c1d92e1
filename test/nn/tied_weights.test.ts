/**
 * Tied weights in state dicts (lib/nn/module.ts), as PyTorch: stateDict() lists a shared parameter
 * under every name; strict loadStateDict takes a dict with every name or with one name of a tied
 * group (safetensors' load_model), and refuses tied names that disagree; a nanoGPT-style model's
 * files move both ways between flockml and PyTorch (test/fixtures/tied_weights_interop.py).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { tempDir } from '../io/helpers';

const nn = fl.nn;
const VOCAB = 11,
  BLOCK = 6,
  EMBD = 8;

/** nanoGPT's names: transformer.{wte,wpe,ln_f} and lm_head, the head tied to the token embedding. */
class GPT extends nn.Module {
  transformer = new nn.ModuleDict({
    wte: new nn.Embedding(VOCAB, EMBD),
    wpe: new nn.Embedding(BLOCK, EMBD),
    ln_f: new nn.LayerNorm([EMBD]),
  });
  lm_head = new nn.Linear(EMBD, VOCAB, { bias: false });
  constructor() {
    super();
    this.lm_head.weight = this.wte.weight;
  }
  get wte(): fl.nn.Embedding {
    return this.transformer.get('wte') as fl.nn.Embedding;
  }
  forward(idx: fl.Tensor): fl.Tensor {
    const pos = fl.arange(idx.shape[1], { dtype: 'i64' });
    const x = (this.wte.forward(idx) as fl.Tensor).add((this.transformer.get('wpe') as fl.nn.Embedding).forward(pos) as fl.Tensor);
    return this.lm_head.forward((this.transformer.get('ln_f') as fl.nn.LayerNorm).forward(x) as fl.Tensor) as fl.Tensor;
  }
}

const KEYS = ['lm_head.weight', 'transformer.ln_f.bias', 'transformer.ln_f.weight', 'transformer.wpe.weight', 'transformer.wte.weight'];

test('stateDict lists a tied parameter under each name, one tensor; parameters() once', () => {
  const m = new GPT();
  const sd = m.stateDict();
  assert.equal(Object.keys(sd).sort(), KEYS);
  assert.is(sd['lm_head.weight'], sd['transformer.wte.weight']);
  assert.is(m.parameters().length, 4);
  assert.equal([...m.namedParameters('', true, false)].map(([k]) => k).sort(), KEYS);
});

test('strict loadStateDict takes every name, or one name of the tied group, and loads the shared tensor', () => {
  fl.manualSeed(1);
  const src = new GPT();
  const want = Array.from(src.wte.weight.dataSync() as Float32Array);
  const full = Object.fromEntries(Object.entries(src.stateDict()).map(([k, v]) => [k, v.clone()]));
  const a = new GPT();
  assert.equal(a.loadStateDict(full), { missingKeys: [], unexpectedKeys: [] });
  assert.equal(Array.from(a.lm_head.weight.dataSync() as Float32Array), want);
  assert.is(a.lm_head.weight, a.wte.weight, 'still tied');
  for (const drop of ['lm_head.weight', 'transformer.wte.weight']) {
    const b = new GPT();
    const one = { ...full };
    delete one[drop];
    assert.equal(b.loadStateDict(one), { missingKeys: [], unexpectedKeys: [] }, `without ${drop}`);
    assert.equal(Array.from(b.lm_head.weight.dataSync() as Float32Array), want, `without ${drop}`);
  }
});

test('tied names that disagree, or a whole tied group missing, are refused and change nothing', () => {
  const src = new GPT();
  const full = Object.fromEntries(Object.entries(src.stateDict()).map(([k, v]) => [k, v.clone()]));
  const m = new GPT();
  const before = Array.from(m.wte.weight.dataSync() as Float32Array);
  assert.throws(
    () => m.loadStateDict({ ...full, 'lm_head.weight': full['lm_head.weight'].add(1) }),
    (e: { code?: string; message: string }) =>
      e.code === 'ERR_STATE_DICT' &&
      /'transformer\.wte\.weight' and 'lm_head\.weight'|'lm_head\.weight' and 'transformer\.wte\.weight'/.test(e.message),
  );
  const none = { ...full };
  delete none['lm_head.weight'];
  delete none['transformer.wte.weight'];
  assert.throws(
    () => m.loadStateDict(none),
    (e: { code?: string; message: string }) => e.code === 'ERR_STATE_DICT' && /missing keys: .*lm_head\.weight/.test(e.message),
  );
  assert.equal(m.loadStateDict(none, { strict: false }).missingKeys.sort(), ['lm_head.weight', 'transformer.wte.weight']);
  assert.equal(Array.from(m.wte.weight.dataSync() as Float32Array), before);
});

test('a shared submodule is listed under each of its names, as PyTorch', () => {
  const shared = new nn.Linear(2, 2);
  const seq = new nn.Sequential(shared, new nn.ReLU(), shared);
  assert.equal(Object.keys(seq.stateDict()).sort(), ['0.bias', '0.weight', '2.bias', '2.weight']);
  assert.is(seq.parameters().length, 2);
  seq.loadStateDict({ '0.weight': fl.ones([2, 2]), '0.bias': fl.zeros([2]) });
  assert.equal(Array.from(shared.weight.dataSync() as Float32Array), [1, 1, 1, 1]);
});

const PYTHON = '/usr/bin/python3';
const SCRIPT = join(__dirname, '..', 'fixtures', 'tied_weights_interop.py');
const hasTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch, numpy'], { encoding: 'utf8' }).status === 0;
const { dir, cleanup } = tempDir('tied');
test.after(cleanup);

function python(...args: string[]): Record<string, unknown> {
  const r = spawnSync(PYTHON, [SCRIPT, ...args], { encoding: 'utf8', timeout: 120_000 });
  assert.is(r.status, 0, `${SCRIPT} ${args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string);
}

function pythonSideRuns(): boolean {
  if (hasTorch) return true;
  assert.not.ok(process.env.CI, 'CI must have /usr/bin/python3 with torch and numpy');
  console.log('  (skipped outside CI: no /usr/bin/python3 with torch)');
  return false;
}

test("PyTorch's nanoGPT state dict (both names) loads strictly and gives PyTorch's logits", async () => {
  if (!pythonSideRuns()) return;
  assert.equal((python('write', dir).keys as string[]).sort(), KEYS);
  const m = new GPT().eval();
  m.loadStateDict(await fl.load(join(dir, 'torch_gpt.safetensors')));
  const io = await fl.load(join(dir, 'torch_io.safetensors'));
  const diff = m.forward(io.idx).sub(io.logits).abs().max().itemSync();
  assert.ok(diff < 1e-5, `logits differ from PyTorch's by ${diff}`);
});

test("flockml's saved state dict loads into PyTorch with load_state_dict(strict=True)", async () => {
  if (!pythonSideRuns()) return;
  fl.manualSeed(4);
  const m = new GPT().eval();
  await fl.save(m.stateDict(), join(dir, 'flock_gpt.safetensors'));
  const idx = fl.randint(0, VOCAB, [2, BLOCK], { dtype: 'i64' });
  await fl.save({ idx, logits: m.forward(idx) }, join(dir, 'flock_io.safetensors'));
  const r = python('check', dir);
  assert.equal(r.keys, KEYS);
  assert.equal(r.missing, []);
  assert.equal(r.unexpected, []);
  assert.is(r.tied, true);
  assert.ok((r.max_diff as number) < 1e-5, `PyTorch's logits differ by ${r.max_diff}`);
});

test.run();
