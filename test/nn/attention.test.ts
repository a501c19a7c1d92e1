import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import type { Tensor } from '../../lib';
import type { ScaledDotProductAttentionOptions as SdpaOptions } from '../../lib/nn/functional/attention';
import { gradcheck } from '../helpers/gradcheck';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';
import { throwsCode } from '../fixtures/load';

const F = fl.nn.functional;

interface Ref {
  mask?: Tensor | null;
  causal?: boolean;
  scale?: number;
  /** Multiplies the weights after softmax (dropout's keep mask already divided by 1 - p). */
  keep?: Tensor;
}

/** The unfused composition: matmul → scale → mask → softmax → (dropout) → matmul. */
function unfused(q: Tensor, k: Tensor, v: Tensor, r: Ref = {}): Tensor {
  const tq = q.shape[q.ndim - 2],
    tk = k.shape[k.ndim - 2];
  let s = q.matmul(k.transpose(-2, -1)).mul(r.scale ?? 1 / Math.sqrt(q.shape[q.ndim - 1]));
  if (r.causal) {
    const above = Array.from({ length: tq * tk }, (_, e) => e % tk > Math.floor(e / tk));
    s = s.maskedFill(fl.tensor(Uint8Array.from(above, Number), { dtype: 'bool', shape: [tq, tk] }), -Infinity);
  }
  if (r.mask) s = r.mask.dtype === 'bool' ? s.maskedFill(fl.logicalNot(r.mask), -Infinity) : s.add(r.mask);
  let w = fl.softmax(s, -1);
  if (r.keep) w = w.mul(r.keep);
  return w.matmul(v);
}

function rand(shape: number[], dtype: fl.DType = 'f64'): Tensor {
  return fl.randn(shape, { dtype }).requiresGrad_();
}

function boolMask(shape: number[], pKeep: number, seedRow = true): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const last = shape[shape.length - 1];
  // Keep the first key of every row so no row is fully masked (those are NaN, tested apart).
  const vals = Array.from({ length: n }, (_, i) => (seedRow && i % last === 0) || Math.random() < pKeep);
  return fl.tensor(Uint8Array.from(vals, Number), { dtype: 'bool', shape });
}

/** Forward and the gradients of Σ w·out for q, k, v: fused against unfused, both in f64. */
function compare(shapes: [number[], number[], number[]], opts: SdpaOptions, ref: Ref, tol = 1e-10): void {
  const [q, k, v] = shapes.map((s) => rand(s));
  const got = F.scaledDotProductAttention(q, k, v, opts);
  const want = unfused(q, k, v, ref);
  assert.equal(got.shape, want.shape);
  close(values(got), values(want), tol, tol, 'out');
  const w = fl.randn([...want.shape], { dtype: 'f64' });
  got.mul(w).sum().backward();
  const fused = [q, k, v].map((t) => values(t.grad as Tensor));
  for (const t of [q, k, v]) t.grad = null;
  want.mul(w).sum().backward();
  ['q', 'k', 'v'].forEach((name, i) => close(fused[i], values([q, k, v][i].grad as Tensor), tol, tol, `grad ${name}`));
}

test('memory stays linear in T: no [T, T] buffer is allocated at T = 2048', () => {
  const t = 2048;
  const [q, k, v] = [0, 1, 2].map(() => fl.randn([1, 1, t, 16]).requiresGrad_());
  const before = fl.memory().cpu.peakBytes;
  const base = fl.memory().cpu.bytes;
  const out = F.scaledDotProductAttention(q, k, v, { isCausal: true });
  out.sum().backward();
  out.dataSync();
  const peak = fl.memory().cpu.peakBytes;
  // Runs first in this file, so the peak so far is small. A score matrix alone would be 16 MiB in f32; inputs, outputs and gradients are 128 KiB each.
  const grown = peak - Math.max(before, base);
  assert.ok(grown < 4 * 1024 * 1024, `peak grew by ${grown} bytes`);
});

for (const t of [1, 7, 129]) {
  test(`T=${t}: plain, causal, bool, additive and key-padding masks match the composition in f64`, () => {
    compare(
      [
        [2, 3, t, 5],
        [2, 3, t, 5],
        [2, 3, t, 4],
      ],
      {},
      {},
    );
    compare(
      [
        [2, 3, t, 5],
        [2, 3, t, 5],
        [2, 3, t, 4],
      ],
      { isCausal: true },
      { causal: true },
    );
    const bm = boolMask([t, t], 0.6);
    compare(
      [
        [2, 2, t, 6],
        [2, 2, t, 6],
        [2, 2, t, 3],
      ],
      { attnMask: bm },
      { mask: bm },
    );
    const am = fl.randn([2, 1, t, t], { dtype: 'f64' });
    compare(
      [
        [2, 2, t, 6],
        [2, 2, t, 6],
        [2, 2, t, 3],
      ],
      { attnMask: am, scale: 0.3 },
      { mask: am, scale: 0.3 },
    );
    const pad = boolMask([2, 1, 1, t], 0.5);
    compare(
      [
        [2, 3, t, 4],
        [2, 3, t, 4],
        [2, 3, t, 4],
      ],
      { attnMask: pad },
      { mask: pad },
    );
  });
}

test('cross attention (tq ≠ tk), 3-D inputs and a head-wise mask between broadcast dims', () => {
  compare(
    [
      [3, 9, 4],
      [3, 130, 4],
      [3, 130, 7],
    ],
    {},
    {},
  );
  compare(
    [
      [3, 70, 4],
      [3, 5, 4],
      [3, 5, 2],
    ],
    { isCausal: true },
    { causal: true },
  );
  // [1, H, 1, tk] over [B, H, ...] and [B, 1, H2... ] patterns: the planner's divisor and period.
  const headMask = boolMask([1, 3, 1, 11], 0.5);
  compare(
    [
      [2, 3, 8, 4],
      [2, 3, 11, 4],
      [2, 3, 11, 4],
    ],
    { attnMask: headMask },
    { mask: headMask },
  );
  const gapMask = boolMask([2, 1, 2, 8, 11], 0.5);
  compare(
    [
      [2, 3, 2, 8, 4],
      [2, 3, 2, 11, 4],
      [2, 3, 2, 11, 4],
    ],
    { attnMask: gapMask },
    { mask: gapMask },
  );
});

test('T=1000 causal forward and gradients match the composition', () => {
  compare(
    [
      [1, 1, 1000, 4],
      [1, 1, 1000, 4],
      [1, 1, 1000, 4],
    ],
    { isCausal: true },
    { causal: true },
    1e-9,
  );
});

test('f64 gradcheck on small shapes, plain, causal and masked', () => {
  const q = fl.randn([1, 2, 3, 4], { dtype: 'f64' }),
    k = fl.randn([1, 2, 5, 4], { dtype: 'f64' }),
    v = fl.randn([1, 2, 5, 3], { dtype: 'f64' });
  const m = fl.randn([3, 5], { dtype: 'f64' });
  for (const opts of [{}, { isCausal: true }, { attnMask: m }] as SdpaOptions[]) {
    const err = gradcheck(([a, b, c]) => F.scaledDotProductAttention(a, b, c, opts), [q, k, v], { atol: 1e-7, rtol: 1e-6 });
    assert.is(err, null, err ?? '');
  }
});

test('dropout uses the Philox mask fl.bernoulli draws at the same generator state', () => {
  const p = 0.3;
  const [q, k, v] = [rand([2, 2, 9, 4]), rand([2, 2, 9, 4]), rand([2, 2, 9, 5])];
  fl.manualSeed(1234);
  const state = fl.getRngState();
  const got = F.scaledDotProductAttention(q, k, v, { dropoutP: p });
  const after = fl.getRngState();
  fl.setRngState(state);
  const keep = fl.bernoulli([2, 2, 9, 9], 1 - p, { dtype: 'f64' }).mul(1 / (1 - p));
  assert.equal(fl.getRngState(), after, 'both draws advance the generator alike');
  const want = unfused(q, k, v, { keep });
  close(values(got), values(want), 1e-10, 1e-10, 'out');
  const w = fl.randn([...want.shape], { dtype: 'f64' });
  got.mul(w).sum().backward();
  const fused = [q, k, v].map((t) => values(t.grad as Tensor));
  for (const t of [q, k, v]) t.grad = null;
  want.mul(w).sum().backward();
  ['q', 'k', 'v'].forEach((name, i) => close(fused[i], values([q, k, v][i].grad as Tensor), 1e-10, 1e-10, `grad ${name}`));
  const kept = values(keep).filter((x) => x > 0).length / 324;
  assert.ok(kept > 0.5 && kept < 0.9, `keep fraction ${kept}`);
});

test('f32 agrees with f64, and bf16 runs with f32 accumulation', () => {
  const [q, k, v] = [
    [2, 4, 33, 8],
    [2, 4, 33, 8],
    [2, 4, 33, 8],
  ].map((s) => fl.randn(s, { dtype: 'f64' }));
  const ref = values(F.scaledDotProductAttention(q, k, v, { isCausal: true }));
  const f32 = F.scaledDotProductAttention(q.to('f32'), k.to('f32'), v.to('f32'), { isCausal: true });
  assert.is(f32.dtype, 'f32');
  close(values(f32), ref, 1e-5, 1e-5, 'f32');
  const b16 = F.scaledDotProductAttention(q.to('bf16'), k.to('bf16'), v.to('bf16'), { isCausal: true });
  close(values(b16.to('f64')), ref, 3e-2, 3e-2, 'bf16');
});

test('a row that may attend to nothing is NaN, as in the composition; no keys gives zeros', () => {
  const q = fl.randn([1, 2, 3], { dtype: 'f64' }),
    k = fl.randn([1, 4, 3], { dtype: 'f64' }),
    v = fl.randn([1, 4, 2], { dtype: 'f64' });
  const m = fl.tensor(Uint8Array.from([true, true, false, false, false, false, false, false], Number), { dtype: 'bool', shape: [2, 4] });
  const out = values(F.scaledDotProductAttention(q, k, v, { attnMask: m }));
  assert.ok(out.slice(0, 2).every(Number.isFinite));
  assert.ok(out.slice(2).every(Number.isNaN));
  const empty = F.scaledDotProductAttention(q, fl.zeros([1, 0, 3], { dtype: 'f64' }), fl.zeros([1, 0, 2], { dtype: 'f64' }));
  assert.equal(values(empty), [0, 0, 0, 0]);
});

test('bad arguments fail with codes that name scaledDotProductAttention', () => {
  const q = fl.randn([2, 4, 8]),
    k = fl.randn([2, 5, 8]),
    v = fl.randn([2, 5, 3]);
  const call =
    (a: Tensor, b: Tensor, c: Tensor, o: SdpaOptions = {}) =>
    () =>
      F.scaledDotProductAttention(a, b, c, o);
  throwsCode(call(q, fl.randn([2, 5, 7]), v), 'ERR_SHAPE');
  throwsCode(call(q, k, fl.randn([2, 6, 3])), 'ERR_SHAPE');
  throwsCode(call(q, fl.randn([3, 5, 8]), v), 'ERR_SHAPE');
  throwsCode(call(q, k, v, { attnMask: fl.randn([4, 4]) }), 'ERR_SHAPE');
  throwsCode(call(q, k, v, { attnMask: fl.zeros([4, 5], { dtype: 'i32' }) }), 'ERR_DTYPE');
  throwsCode(call(q, k, v, { attnMask: fl.ones([4, 5], { dtype: 'bool' }), isCausal: true }), 'ERR_ARG');
  throwsCode(call(q, k, v, { dropoutP: 1.5 }), 'ERR_RANGE');
  throwsCode(call(q, k.to('f64'), v), 'ERR_DTYPE');
  throwsCode(call(q, k, v, { isCasual: true } as SdpaOptions), 'ERR_ARG');
  throwsCode(call(fl.zeros([2, 4], { dtype: 'i64' }), k, v), 'ERR_DTYPE');
  assert.throws(call(q, k, v, { attnMask: fl.randn([4, 4]) }), /scaledDotProductAttention.*attnMask \[4,4\]/);
});

test.run();
