/** fl.models.Llama against transformers' Llama (test/fixtures/make_lm_fixtures.py follows modeling_llama.py). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { caught } from '../helpers/errors';
import { expected, expectTrains, load, maxError } from './helpers';

const tiny: fl.models.LlamaConfig = {
  vocab_size: 64,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
};

test('fromPretrained gives transformers logits (1e-5): GQA with llama3 rope scaling, untied; tied head with linear scaling', async () => {
  for (const name of ['llama', 'llama_tied']) {
    const e = expected(name);
    const m = await load(name);
    assert.ok(maxError(m.forward(fl.tensor(e.prompts, { dtype: 'i64' })), e.logits) < 1e-5, name);
  }
});

test('left padding: rotary positions from the attention mask, as transformers', async () => {
  for (const name of ['llama', 'llama_tied']) {
    const e = expected(name);
    const m = await load(name);
    const got = m.forward(fl.tensor(e.padded_ids, { dtype: 'i64' }), { attentionMask: e.padded_mask });
    assert.ok(maxError(got, e.padded_logits, e.padded_mask) < 1e-5, name);
  }
});

test("parameter names are transformers'; k/v projections are num_key_value_heads wide; tie_word_embeddings ties", () => {
  const m = new fl.models.Llama(tiny);
  const p = Object.fromEntries(m.namedParameters());
  assert.equal(p['model.layers.0.self_attn.q_proj.weight'].shape, [32, 32]);
  assert.equal(p['model.layers.0.self_attn.k_proj.weight'].shape, [16, 32]);
  assert.equal(p['model.layers.1.mlp.gate_proj.weight'].shape, [64, 32]);
  assert.ok('model.norm.weight' in p && 'lm_head.weight' in p);
  assert.is.not(m.lm_head.weight, m.model.embed_tokens.weight);
  const tied = new fl.models.Llama({ ...tiny, tie_word_embeddings: true });
  assert.is(tied.lm_head.weight, tied.model.embed_tokens.weight);
  assert.not.ok([...tied.namedParameters()].some(([n]) => n === 'lm_head.weight'));
  const biased = Object.fromEntries(new fl.models.Llama({ ...tiny, attention_bias: true, head_dim: 16 }).namedParameters());
  assert.equal(biased['model.layers.0.self_attn.q_proj.bias'].shape, [64]);
  assert.equal(biased['model.layers.0.self_attn.o_proj.weight'].shape, [32, 64]);
});

test('rope_theta and rope_scaling change the logits; other scalings are refused with ERR_ARG', () => {
  const ids = fl.tensor([[1, 2, 3, 4, 5, 6, 7, 8]], { dtype: 'i64' });
  const run = (extra: Partial<fl.models.LlamaConfig>) => {
    fl.manualSeed(7);
    return new fl.models.Llama({ ...tiny, ...extra }).forward(ids);
  };
  const base = run({});
  assert.ok(
    base
      .sub(run({ rope_theta: 500 }))
      .abs()
      .max()
      .itemSync() > 1e-4,
  );
  assert.ok(
    base
      .sub(run({ rope_scaling: { rope_type: 'linear', factor: 4 } }))
      .abs()
      .max()
      .itemSync() > 1e-4,
  );
  assert.ok(
    base
      .sub(run({ rope_scaling: { rope_type: 'default' } }))
      .abs()
      .max()
      .itemSync() === 0,
  );
  for (const kind of ['dynamic', 'yarn', 'longrope']) {
    const err = caught(() => new fl.models.Llama({ ...tiny, rope_scaling: { rope_type: kind as 'linear', factor: 2 } }));
    assert.is(err.code, 'ERR_ARG', kind);
    assert.match(err.message, 'rope_scaling');
  }
  assert.is(caught(() => new fl.models.Llama({ ...tiny, rope_scaling: { type: 'llama3', factor: 8 } })).code, 'ERR_ARG');
});

test('config checks name the field', () => {
  for (const [cfg, field] of [
    [{ ...tiny, num_key_value_heads: 3 }, 'num_key_value_heads'],
    [{ ...tiny, hidden_act: 'gelu' }, 'hidden_act'],
    [{ ...tiny, sliding_window: 4096 }, 'sliding_window'],
  ] as const) {
    const err = caught(() => new fl.models.Llama(cfg as fl.models.LlamaConfig));
    assert.is(err.code, 'ERR_ARG', field);
    assert.match(err.message, field);
  }
  assert.is(caught(() => new fl.models.Llama(null as never)).code, 'ERR_ARG');
});

test('f64 and bf16 parameters via fromPretrained({ dtype })', async () => {
  const e = expected('llama');
  const m64 = await load('llama', { dtype: 'f64' });
  assert.is(m64.dtype, 'f64');
  assert.ok(maxError(m64.forward(fl.tensor(e.prompts, { dtype: 'i64' })), e.logits) < 1e-5);
  const bf = await load('llama', { dtype: 'bf16' });
  assert.is(bf.dtype, 'bf16');
  const out = bf.forward(fl.tensor(e.prompts, { dtype: 'i64' }));
  assert.is(out.dtype, 'bf16');
  assert.ok(maxError(out, e.logits) < 0.3, 'bf16: 8-bit mantissas through two layers');
});

test('trains: every parameter (the tied one included) gets a gradient and the loss falls', () => {
  fl.manualSeed(1);
  expectTrains(new fl.models.Llama(tiny), 64);
});

test("a tied head keeps no weight of its own: construction leaves the parameters' bytes alone live", async () => {
  await fl.sync();
  const before = fl.memory().cpu.bytes;
  const m = new fl.models.Llama({ ...tiny, tie_word_embeddings: true });
  await fl.sync();
  const params = m.parameters().reduce((n, p) => n + p.numel() * 4, 0);
  // The garbage collector may free other tests' tensors meanwhile (never more are made): at most, not equal.
  assert.ok(fl.memory().cpu.bytes - before <= params, `${fl.memory().cpu.bytes - before} bytes live for ${params} of parameters`);
});

test.run();
