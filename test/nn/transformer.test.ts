import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import type { Tensor } from '../../lib';
type Module = fl.nn.Module;
import { type FixtureTensor, close, load, numericGradCheck, throwsCode } from '../fixtures/load';

// biome-ignore lint/suspicious/noExplicitAny: fixture cases of many shapes, checked by the tests that read them
const fx: Record<string, any> = JSON.parse(readFileSync(join(__dirname, '../fixtures/transformer_fixtures.json'), 'utf8'));
const nn = fl.nn;

type Dt = 'f64' | 'f32';
const TOL: Record<Dt, number> = { f64: 1e-10, f32: 1e-5 };

function mask(f: { shape: number[]; data: (number | boolean)[] }, dtype: Dt): Tensor {
  return typeof f.data[0] === 'boolean'
    ? fl.tensor(Uint8Array.from(f.data as boolean[], Number), { dtype: 'bool', shape: f.shape })
    : load(f as FixtureTensor, dtype);
}

/** Builds the module, loads PyTorch's state dict, runs `call` and checks outputs and every gradient. */
function check(
  name: string,
  dtype: Dt,
  build: (o: Record<string, never>, dtype: Dt) => Module,
  call: (m: Module, ins: Record<string, Tensor>, masks: Record<string, Tensor>) => (Tensor | null)[],
): void {
  const c = fx[name];
  const r = c[dtype];
  const m = build(c.options, dtype);
  const state = Object.fromEntries(Object.entries(c.state as Record<string, FixtureTensor>).map(([k, v]) => [k, load(v, dtype)]));
  assert.equal(Object.keys(m.stateDict()), Object.keys(state), `${name}: state-dict names and order`);
  m.loadStateDict(state);
  const ins = Object.fromEntries(Object.entries(c.inputs as Record<string, FixtureTensor>).map(([k, v]) => [k, load(v, dtype, true)]));
  const masks = Object.fromEntries(Object.entries(c.masks as Record<string, FixtureTensor>).map(([k, v]) => [k, mask(v, dtype)]));
  const outs = call(m, ins, masks).filter((o): o is Tensor => o !== null);
  assert.is(outs.length, r.outputs.length, `${name}: number of outputs`);
  outs.forEach((o, i) => {
    assert.is(o.dtype, dtype);
    close(o, r.outputs[i], TOL[dtype], `${name} ${dtype} output ${i}`);
  });
  outs
    .map((o, i) => o.mul(load(r.gys[i], dtype)).sum())
    .reduce((a, b) => a.add(b))
    .backward();
  const params = Object.fromEntries(m.namedParameters());
  for (const [k, g] of Object.entries(r.grads as Record<string, FixtureTensor>)) {
    const got = k.startsWith('param:') ? params[k.slice(6)]?.grad : ins[k].grad;
    assert.ok(got, `${name}: gradient of ${k} missing`);
    close(got as Tensor, g, TOL[dtype], `${name} ${dtype} grad ${k}`);
  }
}

for (const dtype of ['f64', 'f32'] as const) {
  test(`MultiheadAttention self-attention with key padding, additive mask and weights matches PyTorch (${dtype})`, () => {
    check(
      'mha_self',
      dtype,
      (o, dt) => new nn.MultiheadAttention(o.embedDim, o.numHeads, { dtype: dt }),
      (m, { x }, mk) =>
        (m as fl.nn.MultiheadAttention).forward(x, x, x, { keyPaddingMask: mk.keyPaddingMask, attnMask: mk.attnMask, needWeights: true }),
    );
  });

  for (const name of ['mha_cross', 'mha_cross_weights']) {
    test(`MultiheadAttention cross-attention, kdim/vdim, batchFirst, 3-D bool mask: ${name} (${dtype})`, () => {
      check(
        name,
        dtype,
        (o, dt) => new nn.MultiheadAttention(o.embedDim, o.numHeads, { kdim: o.kdim, vdim: o.vdim, batchFirst: true, dtype: dt }),
        (m, { q, k, v }, mk) => (m as fl.nn.MultiheadAttention).forward(q, k, v, { attnMask: mk.attnMask, ...fx[name].forward }),
      );
    });
  }

  for (const order of ['post', 'pre']) {
    test(`TransformerEncoderLayer (${order}-norm) matches PyTorch forward and backward (${dtype})`, () => {
      check(
        `encoder_${order}`,
        dtype,
        (o, dt) =>
          new nn.TransformerEncoderLayer(o.dModel, o.nhead, {
            dimFeedforward: o.dimFeedforward,
            dropout: 0,
            activation: o.activation,
            normFirst: o.normFirst,
            dtype: dt,
          }),
        (m, { src }, mk) => [(m as fl.nn.TransformerEncoderLayer).forward(src, { mask: mk.mask, srcKeyPaddingMask: mk.srcKeyPaddingMask })],
      );
    });

    test(`TransformerDecoderLayer (${order}-norm) matches PyTorch forward and backward (${dtype})`, () => {
      check(
        `decoder_${order}`,
        dtype,
        (o, dt) =>
          new nn.TransformerDecoderLayer(o.dModel, o.nhead, {
            dimFeedforward: o.dimFeedforward,
            dropout: 0,
            activation: o.activation,
            normFirst: o.normFirst,
            batchFirst: true,
            dtype: dt,
          }),
        (m, { tgt, memory }, mk) => [
          (m as fl.nn.TransformerDecoderLayer).forward(tgt, memory, { tgtMask: mk.tgtMask, memoryKeyPaddingMask: mk.memoryKeyPaddingMask }),
        ],
      );
    });
  }
}

test('isCausal on an encoder layer equals the explicit causal mask', () => {
  const layer = new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, normFirst: true, batchFirst: true, dtype: 'f64' });
  const x = fl.randn([3, 6, 8], { dtype: 'f64' });
  const a = layer.forward(x, { isCausal: true });
  const b = layer.forward(x, { mask: nn.causalMask(6) });
  close(a, { shape: [...b.shape], data: Array.from(b.dataSync() as Float64Array) }, 1e-12, 'causal');
});

test("forward options take PyTorch's names: srcMask (or mask) on encoders, memoryIsCausal on decoders", () => {
  const same = (a: Tensor, b: Tensor, what: string) =>
    close(a, { shape: [...b.shape], data: Array.from(b.dataSync() as Float64Array) }, 1e-12, what);
  const layer = new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true, dtype: 'f64' });
  const x = fl.randn([2, 5, 8], { dtype: 'f64' });
  const pad = fl.tensor([
    [false, false, false, true, true],
    [false, false, false, false, false],
  ]);
  const m = nn.causalMask(5);
  const ref = layer.forward(x, { mask: m, srcKeyPaddingMask: pad });
  same(layer.forward(x, { srcMask: m, srcKeyPaddingMask: pad }), ref, 'layer srcMask');
  same(layer.forward(x, { srcKeyPaddingMask: pad, isCausal: true }), ref, 'layer isCausal');
  const stack = new nn.TransformerEncoder(layer, 2);
  same(stack.forward(x, { srcMask: m }), stack.forward(x, { mask: m }), 'stack srcMask');
  throwsCode(() => layer.forward(x, { srcMask: m, mask: m }), 'ERR_ARG');
  const e = fl.errors;
  try {
    layer.forward(x, { src_mask: m } as never);
    assert.unreachable('src_mask is refused');
  } catch (err) {
    assert.instance(err, e.FlockTypeError);
    assert.match((err as Error).message, /did you mean 'srcMask'/);
  }

  const dec = new nn.TransformerDecoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true, dtype: 'f64' });
  const tgt = fl.randn([2, 4, 8], { dtype: 'f64' });
  const mem = fl.randn([2, 6, 8], { dtype: 'f64' });
  const memCausal = fl.tensor(Array.from({ length: 4 }, (_, i) => Array.from({ length: 6 }, (_, j) => j > i)));
  same(
    dec.forward(tgt, mem, { tgtIsCausal: true, memoryIsCausal: true }),
    dec.forward(tgt, mem, { tgtMask: nn.causalMask(4), memoryMask: memCausal }),
    'decoder isCausal flags',
  );
  const memPad = fl.tensor([
    [false, false, false, false, true, true],
    [false, false, false, false, false, false],
  ]);
  const tgtPad = fl.tensor([
    [false, false, false, true],
    [false, false, false, false],
  ]);
  const full = dec.forward(tgt, mem, { tgtMask: nn.causalMask(4), tgtKeyPaddingMask: tgtPad, memoryKeyPaddingMask: memPad });
  const unmasked = dec.forward(tgt, mem);
  assert.ok(Math.abs(full.sub(unmasked).abs().sum().itemSync()) > 1e-6, 'the masks change the output');
});

test('causalMask: bool [T, T], true above the diagonal; t and device checked', () => {
  const m = nn.causalMask(4);
  assert.is(m.dtype, 'bool');
  assert.equal(m.shape, [4, 4]);
  assert.equal(Array.from(m.dataSync() as Uint8Array), [0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0]);
  assert.equal(nn.causalMask(0).shape, [0, 0]);
  throwsCode(() => nn.causalMask(-1), 'ERR_RANGE');
  throwsCode(() => nn.causalMask('4' as never), 'ERR_ARG');
  throwsCode(() => nn.causalMask(2, 'tpu'), 'ERR_DEVICE');
  // t·t values were a JS array first: a large t was "Invalid array length".
  throwsCode(() => nn.causalMask(Number.MAX_SAFE_INTEGER), 'ERR_OOM');
});

test('TransformerEncoder and Decoder stack copies with PyTorch state-dict names and an optional final norm', () => {
  const layer = new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0 });
  const enc = new nn.TransformerEncoder(layer, 3, new nn.LayerNorm(8));
  const keys = Object.keys(enc.stateDict());
  assert.ok(keys.includes('layers.2.self_attn.out_proj.weight'));
  assert.ok(keys.includes('layers.0.linear1.bias'));
  assert.is(keys[keys.length - 1], 'norm.bias');
  // Every copy starts from the template's weights but owns its own parameters.
  const w0 = enc.stateDict()['layers.0.self_attn.in_proj_weight'];
  const w2 = enc.stateDict()['layers.2.self_attn.in_proj_weight'];
  assert.equal(Array.from(w0.dataSync() as Float32Array), Array.from(w2.dataSync() as Float32Array));
  assert.is.not(w0, w2);
  assert.is(enc.parameters().length, 3 * layer.parameters().length + 2);
  const y = enc.forward(fl.randn([5, 2, 8]));
  assert.equal([...y.shape], [5, 2, 8]);
  const dec = new nn.TransformerDecoder(new nn.TransformerDecoderLayer(8, 2, { dimFeedforward: 16, dropout: 0 }), 2);
  assert.ok(Object.keys(dec.stateDict()).includes('layers.1.multihead_attn.in_proj_bias'));
  assert.equal([...dec.forward(fl.randn([4, 2, 8]), fl.randn([5, 2, 8]), { tgtIsCausal: true }).shape], [4, 2, 8]);
});

test('tied embedding and output weights: one parameter, one summed gradient', () => {
  const emb = new nn.Embedding(11, 6, { dtype: 'f64' });
  const head = new nn.Linear(6, 11, { bias: false, dtype: 'f64' });
  head.weight = emb.weight;
  class Tied extends nn.Module {
    constructor(
      readonly emb: fl.nn.Embedding,
      readonly head: fl.nn.Linear,
    ) {
      super();
    }
    forward(ids: Tensor): Tensor {
      return this.head.forward(this.emb.forward(ids));
    }
  }
  const model = new Tied(emb, head);
  assert.is(model.parameters().length, 1, 'the shared weight is listed once');
  const ids = fl.tensor([1, 4, 4, 9, 0], { dtype: 'i64' });
  const gy = fl.randn([5, 11], { dtype: 'f64' });
  model.forward(ids).mul(gy).sum().backward();
  const tied = Array.from(emb.weight.grad?.dataSync() as Float64Array);
  // The same computation with two separate copies: the tied gradient is their sum.
  const a = emb.weight.detach().clone().requiresGrad_();
  const b = emb.weight.detach().clone().requiresGrad_();
  nn.functional.linear(nn.functional.embedding(ids, a), b).mul(gy).sum().backward();
  const ga = a.grad?.dataSync() as Float64Array;
  const gb = b.grad?.dataSync() as Float64Array;
  const sum = Array.from(ga, (x, i) => x + gb[i]);
  close(emb.weight.grad as Tensor, { shape: [11, 6], data: sum }, 1e-12, 'tied grad');
  assert.ok(
    tied.some((x, i) => Math.abs(x - ga[i]) > 1e-6),
    'both uses contribute',
  );
  // The optimizer steps the one tensor once.
  const opt = new fl.optim.SGD(model.parameters(), { lr: 0.1 });
  const before = Array.from(emb.weight.dataSync() as Float64Array);
  opt.step();
  const after = Array.from(head.weight.dataSync() as Float64Array);
  after.forEach((x, i) => assert.ok(Math.abs(x - (before[i] - 0.1 * sum[i])) < 1e-12));
});

test('RMSNorm matches x / sqrt(mean(x²) + eps) · weight and passes a gradient check', () => {
  const m = new nn.RMSNorm([4], { eps: 1e-6, dtype: 'f64' });
  assert.equal(Object.keys(m.stateDict()), ['weight']);
  const x = fl.randn([3, 4], { dtype: 'f64' });
  const w = fl.randn([4], { dtype: 'f64' });
  m.loadStateDict({ weight: w });
  const xs = Array.from(x.dataSync() as Float64Array);
  const ws = Array.from(w.dataSync() as Float64Array);
  const want = xs.map((v, i) => {
    const row = xs.slice(Math.floor(i / 4) * 4, Math.floor(i / 4) * 4 + 4);
    return (v / Math.sqrt(row.reduce((a, b) => a + b * b, 0) / 4 + 1e-6)) * ws[i % 4];
  });
  close(m.forward(x), { shape: [3, 4], data: want }, 1e-12, 'rmsNorm');
  const gy = fl.randn([3, 4], { dtype: 'f64' });
  numericGradCheck((t) => nn.rmsNorm(t, [4], w, 1e-6).mul(gy).sum(), x);
  // Default eps is the dtype's machine epsilon, as torch.finfo(dtype).eps.
  const zero = new nn.RMSNorm(2, { dtype: 'f64' }).forward(fl.zeros([1, 2], { dtype: 'f64' }));
  assert.equal(Array.from(zero.dataSync() as Float64Array), [0, 0]);
  throwsCode(() => m.forward(fl.randn([3, 5])), 'ERR_SHAPE');
});

test('rotary embedding rotates pairs so scores depend only on relative position', () => {
  const q = fl.randn([1, 4, 8], { dtype: 'f64' }),
    k = fl.randn([1, 4, 8], { dtype: 'f64' });
  const rope = new nn.RotaryEmbedding(8);
  const dots = (off: number) => {
    const s = rope.forward(q, off).matmul(rope.forward(k, off).transpose(-2, -1));
    return Array.from(s.dataSync() as Float64Array);
  };
  const a = dots(0),
    b = dots(13);
  a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) < 1e-10, `score ${i}: ${x} vs ${b[i]}`));
  // Position 0 is the identity; norms are preserved; one element by hand.
  const r = rope.forward(q);
  const qs = Array.from(q.dataSync() as Float64Array);
  const rs = Array.from(r.dataSync() as Float64Array);
  for (let i = 0; i < 8; i++) assert.ok(Math.abs(rs[i] - qs[i]) < 1e-15);
  const ang = 2 * 10000 ** (-2 / 8); // position 2, pair 1
  assert.ok(Math.abs(rs[2 * 8 + 1] - (qs[2 * 8 + 1] * Math.cos(ang) - qs[2 * 8 + 5] * Math.sin(ang))) < 1e-12);
  throwsCode(() => nn.applyRotary(fl.randn([2, 3, 5])), 'ERR_SHAPE');
});

test('MultiheadAttention rejects bad shapes and masks with codes', () => {
  const m = new nn.MultiheadAttention(8, 2);
  const x = fl.randn([5, 2, 8]);
  throwsCode(() => new nn.MultiheadAttention(8, 3), 'ERR_ARG');
  throwsCode(() => m.forward(x, x, fl.randn([5, 2, 7])), 'ERR_SHAPE');
  throwsCode(() => m.forward(x, x, x, { keyPaddingMask: fl.zeros([2, 4], { dtype: 'bool' }) }), 'ERR_SHAPE');
  throwsCode(() => m.forward(x, x, x, { attnMask: fl.zeros([3, 5, 5], { dtype: 'bool' }) }), 'ERR_SHAPE');
  throwsCode(() => m.forward(x, x, x, { attnMask: fl.zeros([5, 5], { dtype: 'u8' }) }), 'ERR_DTYPE');
  throwsCode(() => m.forward(x, x, x, { needWeight: false } as never), 'ERR_ARG');
  throwsCode(() => new nn.TransformerEncoderLayer(8, 2, { activation: 'tanh' as never }), 'ERR_ARG');
});

test.run();
