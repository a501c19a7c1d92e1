/** fl.models.GPT2 against transformers' GPT-2 (test/fixtures/make_lm_fixtures.py follows modeling_gpt2.py). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { caught } from '../helpers/errors';
import { tempDir } from '../io/helpers';
import { LM, expected, expectTrains, load, maxError } from './helpers';

const { dir, cleanup } = tempDir('gpt2');
test.after(cleanup);

const rows = (t: fl.Tensor) => t.tolistSync() as number[][];
const tiny: fl.models.GPT2Config = { vocab_size: 64, n_positions: 32, n_embd: 32, n_layer: 2, n_head: 4 };

test('fromPretrained gives transformers logits (1e-5), one file and two shards', async () => {
  for (const name of ['gpt2', 'gpt2_sharded']) {
    const e = expected(name);
    const m = await load(name);
    assert.ok(maxError(m.forward(fl.tensor(e.prompts, { dtype: 'i64' })), e.logits) < 1e-5, name);
  }
});

test('left padding with an attention mask: positions counted from the first real token, as transformers', async () => {
  const e = expected('gpt2');
  const m = await load('gpt2');
  const got = m.forward(fl.tensor(e.padded_ids, { dtype: 'i64' }), { attentionMask: e.padded_mask });
  assert.ok(maxError(got, e.padded_logits, e.padded_mask) < 1e-5);
});

test("parameter names are transformers' names; Conv1D weights are Linear weights (transposed)", () => {
  const m = new fl.models.GPT2(tiny);
  const names = [...m.namedParameters()].map(([n]) => n);
  assert.ok(names.includes('transformer.h.0.attn.c_attn.weight'));
  assert.ok(names.includes('transformer.h.1.mlp.c_proj.bias'));
  assert.ok(names.includes('transformer.wpe.weight'));
  assert.equal(m.transformer.h.children().next().value?.constructor.name, 'GPT2Block');
  assert.equal([...m.namedParameters()].find(([n]) => n === 'transformer.h.0.attn.c_attn.weight')?.[1].shape, [96, 32]);
  assert.is(m.lm_head.weight, m.transformer.wte.weight, 'tied');
  assert.ok('lm_head.weight' in m.stateDict(), 'the tied head is listed under both names');
  const out = m.forward(fl.tensor([[1, 2, 3]], { dtype: 'i64' }));
  assert.equal(out.shape, [1, 3, 64]);
});

test('original checkpoints: names without `transformer.` and attn.bias buffers load', async () => {
  const src = join(LM, 'gpt2');
  const d = join(dir, 'old');
  mkdirSync(d);
  copyFileSync(join(src, 'config.json'), join(d, 'config.json'));
  const state = await fl.io.load(join(src, 'model.safetensors'));
  const renamed: Record<string, fl.Tensor> = {};
  for (const [k, t] of Object.entries(state)) renamed[k.replace(/^transformer\./, '')] = t;
  renamed['h.0.attn.bias'] = fl.ones([1, 1, 32, 32]).tril();
  await fl.io.save(renamed, join(d, 'model.safetensors'));
  const e = expected('gpt2');
  const m = await fl.models.GPT2.fromPretrained(d);
  assert.ok(maxError(m.forward(fl.tensor(e.prompts, { dtype: 'i64' })), e.logits) < 1e-5);
});

test('config checks: unsupported settings throw ERR_ARG naming the field', () => {
  for (const [cfg, field] of [
    [{ ...tiny, activation_function: 'quick_gelu' }, 'activation_function'],
    [{ ...tiny, tie_word_embeddings: false }, 'tie_word_embeddings'],
    [{ ...tiny, n_head: 5 }, 'n_head'],
    [{ ...tiny, model_type: 'llama' }, 'model_type'],
  ] as const) {
    const err = caught(() => new fl.models.GPT2(cfg as fl.models.GPT2Config));
    assert.is(err.code, 'ERR_ARG', field);
    assert.match(err.message, field);
  }
  assert.is(caught(() => new fl.models.GPT2({ ...tiny, n_embd: 0 })).code, 'ERR_RANGE');
  assert.is(caught(() => new fl.models.GPT2(tiny, { dtpye: 'f64' } as never)).code, 'ERR_ARG');
});

test('activation_function gelu, relu and silu are honoured', () => {
  const ids = fl.tensor([[1, 2, 3]], { dtype: 'i64' });
  const outs = ['gelu_new', 'gelu', 'relu'].map((act) => {
    fl.manualSeed(3);
    return new fl.models.GPT2({ ...tiny, activation_function: act as fl.models.GPT2Activation }).forward(ids);
  });
  assert.ok(outs[0].sub(outs[1]).abs().max().itemSync() > 0);
  assert.ok(outs[0].sub(outs[2]).abs().max().itemSync() > 0);
});

test('a checkpoint of the wrong shape or with a missing tensor is refused', async () => {
  const d = join(dir, 'bad');
  mkdirSync(d);
  const cfg = JSON.parse(readFileSync(join(LM, 'gpt2', 'config.json'), 'utf8'));
  writeFileSync(join(d, 'config.json'), JSON.stringify({ ...cfg, n_positions: 16 }));
  copyFileSync(join(LM, 'gpt2', 'model.safetensors'), join(d, 'model.safetensors'));
  const err = await fl.models.GPT2.fromPretrained(d).catch((e) => e);
  assert.is(err.code, 'ERR_SHAPE');
  assert.match(err.message, 'transformer.wpe.weight');
  writeFileSync(join(d, 'config.json'), JSON.stringify({ ...cfg, n_layer: 3 }));
  const missing = await fl.models.GPT2.fromPretrained(d).catch((e) => e);
  assert.is(missing.code, 'ERR_ARG');
  assert.match(missing.message, 'transformer.h.2.');
  const none = await fl.models.GPT2.fromPretrained(join(dir, 'nowhere')).catch((e) => e);
  assert.is(none.code, 'ERR_NOT_FOUND');
});

test('trains: every parameter (the tied one included) gets a gradient and the loss falls', () => {
  fl.manualSeed(1);
  expectTrains(new fl.models.GPT2(tiny), 64);
});

test('LoRA on c_attn and c_fc: the replaced layers run their own forward (zero B: the same logits)', async () => {
  const e = expected('gpt2');
  const m = (await load('gpt2')) as fl.models.GPT2;
  const ids = fl.tensor(e.prompts, { dtype: 'i64' });
  const before = m.forward(ids).tolistSync();
  fl.nn.lora.apply(m, { r: 2, alpha: 4, targets: ['c_attn', 'c_fc'] });
  const replaced = [...m.namedModules()].filter(([, x]) => x instanceof fl.nn.lora.LoraLinear).map(([n]) => n);
  assert.ok(replaced.includes('transformer.h.1.mlp.c_fc') && replaced.includes('transformer.h.0.attn.c_attn'), `${replaced}`);
  assert.ok(maxError(m.forward(ids), before as number[][][]) < 1e-6);
  assert.equal(rows(m.generate(e.greedy_prompt, { maxNewTokens: 10, stopTokens: [] })), e.greedy);
});

test("the tied head keeps no weight of its own: construction leaves the parameters' bytes alone live", async () => {
  await fl.sync();
  const before = fl.memory().cpu.bytes;
  const m = new fl.models.GPT2(tiny);
  await fl.sync();
  const params = m.parameters().reduce((n, p) => n + p.numel() * 4, 0);
  // The garbage collector may free other tests' tensors meanwhile (never more are made): at most, not equal.
  assert.ok(fl.memory().cpu.bytes - before <= params, `${fl.memory().cpu.bytes - before} bytes live for ${params} of parameters`);
});

test.run();
