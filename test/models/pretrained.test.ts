/**
 * savePretrained writes transformers' layout: the PyTorch side (make_lm_fixtures.py check, which
 * reads it as transformers would) gets the fixture's logits, and fromPretrained reads it back.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { tempDir } from '../io/helpers';
import { LM, expected, load, maxError, python, pythonSideRuns } from './helpers';

// Two virtual CPU devices (as FLOCKML_CPU_DEVICES=2), so loading onto cpu:1 is tested.
fl.setCpuDeviceCount(2);
const { dir, cleanup } = tempDir('pretrained');
test.after(cleanup);

test('savePretrained → PyTorch reads it with the HF names and gets the same logits (GPT-2, Llama, tied Llama)', async () => {
  for (const name of ['gpt2', 'llama', 'llama_tied']) {
    const m = await load(name);
    const out = join(dir, name);
    await m.savePretrained(out);
    const header = await fl.io.inspect(join(out, 'model.safetensors'));
    assert.equal(header.metadata, { format: 'pt' });
    const original = await fl.io.inspect(join(LM, name, 'model.safetensors'));
    const shapes = (h: fl.io.SafetensorsHeader) => Object.fromEntries(h.tensors.map((t) => [t.name, t.shape]));
    assert.equal(shapes(header), shapes(original), `${name}: transformers' names and shapes (Conv1D [in, out], tied head once)`);
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    const before = JSON.parse(readFileSync(join(LM, name, 'config.json'), 'utf8'));
    assert.equal(config, { ...before, torch_dtype: 'float32' }, `${name}: config.json round-trips`);
    const e = expected(name);
    const back = await (e.kind === 'gpt2' ? fl.models.GPT2 : fl.models.Llama).fromPretrained(out);
    assert.ok(maxError(back.forward(fl.tensor(e.prompts, { dtype: 'i64' })), e.logits) < 1e-5);
    if (pythonSideRuns()) {
      const r = python('check', out, join(LM, name));
      assert.ok(r.allclose === true, `${name}: PyTorch's logits from flockml's files differ by ${r.max_diff} (rtol 1e-5, atol 1e-5)`);
      assert.equal(r.metadata, { format: 'pt' });
    }
  }
});

test('a model changed in flockml saves its new values', async () => {
  const m = await fl.models.GPT2.fromPretrained(join(LM, 'gpt2'));
  fl.noGrad(() => m.transformer.h.parameters()[0].mul_(1.5));
  const out = join(dir, 'changed');
  await m.savePretrained(out);
  const again = await fl.models.GPT2.fromPretrained(out);
  const ids = fl.tensor([[1, 2, 3]], { dtype: 'i64' });
  assert.ok(m.forward(ids).sub(again.forward(ids)).abs().max().itemSync() === 0);
});

test('sharded index names outside the folder are refused', async () => {
  const out = join(dir, 'evil');
  await (await load('gpt2')).savePretrained(out);
  writeFileSync(
    join(out, 'model.safetensors.index.json'),
    JSON.stringify({ weight_map: { 'transformer.wte.weight': '../x.safetensors' } }),
  );
  const err = await fl.models.GPT2.fromPretrained(out).catch((e) => e);
  assert.is(err.code, 'ERR_FORMAT');
});

test('fromPretrained onto a second CPU device: every tensor is read straight to cpu:1', async () => {
  const m = await load('llama', { device: 'cpu:1' });
  assert.is(m.device, 'cpu:1');
  assert.ok(m.parameters().every((p) => p.device === 'cpu:1'));
  const e = expected('llama');
  assert.ok(maxError(m.forward(fl.tensor(e.prompts, { dtype: 'i64', device: 'cpu:1' })), e.logits) < 1e-5);
});

test('maxShardSize writes shards and model.safetensors.index.json that PyTorch and fromPretrained read', async () => {
  const m = await load('gpt2');
  const out = join(dir, 'sharded');
  await m.savePretrained(join(out), { maxShardSize: 40_000 });
  const index = JSON.parse(readFileSync(join(out, 'model.safetensors.index.json'), 'utf8'));
  const files = [...new Set(Object.values(index.weight_map))];
  assert.ok(files.length > 1);
  assert.ok(files.every((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f as string)));
  assert.is(index.metadata.total_size, 4 * m.parameters().reduce((a, p) => a + p.numel(), 0));
  assert.not.ok(existsSync(join(out, 'model.safetensors')));
  const e = expected('gpt2');
  const back = await fl.models.GPT2.fromPretrained(out);
  assert.ok(maxError(back.forward(fl.tensor(e.prompts, { dtype: 'i64' })), e.logits) < 1e-5);
  if (pythonSideRuns()) assert.ok(python('check', out, join(LM, 'gpt2')).allclose === true);
  // Saving again in one file removes the index, which would otherwise be read first.
  await m.savePretrained(out);
  assert.not.ok(existsSync(join(out, 'model.safetensors.index.json')));
  assert.is((await m.savePretrained(out, { maxShardSize: 0 }).catch((e) => e)).code, 'ERR_RANGE');
});

test('fromPretrained draws no random numbers: the parameters it overwrites are not initialised first', async () => {
  fl.manualSeed(5);
  const state = fl.getRngState();
  await load('gpt2');
  await load('llama');
  assert.equal(fl.getRngState(), state, 'the global generator is where it was');
  new fl.models.GPT2({ vocab_size: 8, n_positions: 4, n_embd: 4, n_layer: 1, n_head: 1 });
  assert.not.equal(fl.getRngState(), state, 'a model built with new is initialised from it');
});

test.run();
