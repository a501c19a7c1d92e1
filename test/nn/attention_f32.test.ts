/**
 * The f32-computed attention kernels (f32, bf16, f16 inputs; cpp/cpu/attention_fast.cc): forward
 * and gradients against the unfused composition in f64 on the same values, across tile edges
 * (T = 1, 7, 31, 33, 129, 1000), head dims that do and do not fill a vector, every mask kind,
 * cross attention and dropout (the same Philox mask as the f64 kernel). In the parent run the file
 * runs again under every narrower instruction set this CPU has (FLOCKML_CPU_ISA).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import type { Tensor } from '../../lib';
import type { ScaledDotProductAttentionOptions as SdpaOptions } from '../../lib/nn/functional/attention';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';
import { assertFilePasses } from '../helpers/rerun';

const F = fl.nn.functional;

/** The composition in f64: matmul → scale → mask → softmax → matmul. */
function unfused(q: Tensor, k: Tensor, v: Tensor, o: SdpaOptions): Tensor {
  const tq = q.shape[q.ndim - 2],
    tk = k.shape[k.ndim - 2];
  let s = q.matmul(k.transpose(-2, -1)).mul(o.scale ?? 1 / Math.sqrt(q.shape[q.ndim - 1]));
  if (o.isCausal) {
    const above = Array.from({ length: tq * tk }, (_, e) => e % tk > Math.floor(e / tk));
    s = s.maskedFill(fl.tensor(Uint8Array.from(above, Number), { dtype: 'bool', shape: [tq, tk] }), -Infinity);
  }
  const m = o.attnMask;
  if (m) s = m.dtype === 'bool' ? s.maskedFill(fl.logicalNot(m), -Infinity) : s.add(m.to('f64'));
  return fl.softmax(s, -1).matmul(v);
}

function boolMask(shape: number[], pKeep: number): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const last = shape[shape.length - 1];
  const vals = Array.from({ length: n }, (_, i) => i % last === 0 || Math.random() < pKeep);
  return fl.tensor(Uint8Array.from(vals, Number), { dtype: 'bool', shape });
}

/** The f32 kernel on f32 copies of f64 values against the f64 composition: output and the gradients of Σ w·out. */
function compare(shapes: number[][], opts: SdpaOptions, tol = 2e-5): void {
  const base = shapes.map((s) => fl.randn(s, { dtype: 'f64' }));
  const lo = base.map((t) => t.to('f32').requiresGrad_());
  const hi = base.map((t) => t.clone().requiresGrad_());
  const got = F.scaledDotProductAttention(lo[0], lo[1], lo[2], opts);
  const want = unfused(hi[0], hi[1], hi[2], opts);
  assert.is(got.dtype, 'f32');
  close(values(got), values(want), tol, tol, 'out');
  const w = fl.randn([...want.shape], { dtype: 'f64' });
  got.mul(w.to('f32')).sum().backward();
  want.mul(w).sum().backward();
  ['q', 'k', 'v'].forEach((name, i) => close(values(lo[i].grad as Tensor), values(hi[i].grad as Tensor), tol * 5, tol, `grad ${name}`));
}

fl.manualSeed(5);

for (const t of [1, 7, 31, 33, 129]) {
  test(`f32 T=${t}: plain, causal, bool, additive and key-padding masks match the f64 composition`, () => {
    for (const d of [5, 32]) {
      compare(
        [
          [2, 3, t, d],
          [2, 3, t, d],
          [2, 3, t, d + 1],
        ],
        {},
      );
      compare(
        [
          [2, 3, t, d],
          [2, 3, t, d],
          [2, 3, t, d],
        ],
        { isCausal: true },
      );
    }
    const bm = boolMask([t, t], 0.6);
    compare(
      [
        [2, 2, t, 16],
        [2, 2, t, 16],
        [2, 2, t, 3],
      ],
      { attnMask: bm },
    );
    const am = fl.randn([2, 1, t, t]);
    compare(
      [
        [2, 2, t, 6],
        [2, 2, t, 6],
        [2, 2, t, 7],
      ],
      { attnMask: am, scale: 0.3 },
    );
    const pad = boolMask([2, 1, 1, t], 0.5);
    compare(
      [
        [2, 3, t, 64],
        [2, 3, t, 64],
        [2, 3, t, 64],
      ],
      { attnMask: pad },
    );
  });
}

test('f32 cross attention (tq ≠ tk across tile edges), 3-D inputs and a head-wise mask', () => {
  compare(
    [
      [3, 9, 4],
      [3, 130, 4],
      [3, 130, 7],
    ],
    {},
  );
  compare(
    [
      [3, 70, 4],
      [3, 5, 4],
      [3, 5, 2],
    ],
    { isCausal: true },
  );
  compare(
    [
      [2, 40, 8],
      [2, 33, 8],
      [2, 33, 8],
    ],
    { isCausal: true },
  );
  const headMask = boolMask([1, 3, 1, 35], 0.5);
  compare(
    [
      [2, 3, 8, 4],
      [2, 3, 35, 4],
      [2, 3, 35, 4],
    ],
    { attnMask: headMask },
  );
});

test('f32 T=1000 causal forward and gradients match the composition', () => {
  compare(
    [
      [1, 2, 1000, 16],
      [1, 2, 1000, 16],
      [1, 2, 1000, 16],
    ],
    { isCausal: true },
    1e-4,
  );
});

test('f32 dropout keeps the same Philox mask as the f64 kernel', () => {
  const shapes = [
    [2, 2, 37, 8],
    [2, 2, 37, 8],
    [2, 2, 37, 5],
  ];
  const base = shapes.map((s) => fl.randn(s, { dtype: 'f64' }));
  const run = (dtype: fl.DType) => {
    fl.manualSeed(77);
    const xs = base.map((t) => t.to(dtype).requiresGrad_());
    const out = F.scaledDotProductAttention(xs[0], xs[1], xs[2], { dropoutP: 0.25, isCausal: true });
    out
      .mul(fl.linspace(-1, 1, out.numel(), { dtype }).reshape([...out.shape]))
      .sum()
      .backward();
    return [out, ...xs.map((x) => x.grad as Tensor)].map(values);
  };
  const lo = run('f32');
  const hi = run('f64');
  ['out', 'grad q', 'grad k', 'grad v'].forEach((name, i) => close(lo[i], hi[i], 1e-4, 1e-5, name));
  assert.ok(
    hi[0].some((x, i) => x !== 0 && lo[0][i] !== 0),
    'some weights kept',
  );
});

test('f32: a row that may attend to nothing is NaN, its gradients too; other rows are finite', () => {
  const q = fl.randn([1, 2, 3]).requiresGrad_(),
    k = fl.randn([1, 4, 3]).requiresGrad_(),
    v = fl.randn([1, 4, 2]).requiresGrad_();
  const m = fl.tensor(Uint8Array.from([1, 1, 0, 0, 0, 0, 0, 0]), { dtype: 'bool', shape: [2, 4] });
  const out = F.scaledDotProductAttention(q, k, v, { attnMask: m });
  const o = values(out);
  assert.ok(o.slice(0, 2).every(Number.isFinite));
  assert.ok(o.slice(2).every(Number.isNaN));
  out.narrow(1, 0, 1).sum().backward();
  assert.ok(
    values(q.grad as Tensor)
      .slice(0, 3)
      .every(Number.isFinite),
    'the attending row has a finite gradient',
  );
});

test('bf16 and f16 run the same tiles with f32 accumulation', () => {
  const base = [
    [2, 4, 45, 32],
    [2, 4, 45, 32],
    [2, 4, 45, 32],
  ].map((s) => fl.randn(s, { dtype: 'f64' }));
  const ref = values(F.scaledDotProductAttention(base[0], base[1], base[2], { isCausal: true }));
  for (const [dtype, tol] of [
    ['bf16', 3e-2],
    ['f16', 4e-3],
  ] as const) {
    const xs = base.map((t) => t.to(dtype).requiresGrad_());
    const out = F.scaledDotProductAttention(xs[0], xs[1], xs[2], { isCausal: true });
    assert.is(out.dtype, dtype);
    close(values(out.to('f64')), ref, tol, tol, dtype);
    out.sum().backward();
    for (const x of xs) assert.ok(values((x.grad as Tensor).to('f64')).every(Number.isFinite), `${dtype} gradients finite`);
  }
});

const forced = process.env.FLOCKML_CPU_ISA;
if (!forced) {
  const order = ['generic', 'avx2', 'avx512'];
  const detected = fl.buildInfo().cpuIsaDetected;
  for (const isa of order.slice(0, order.indexOf(detected))) {
    test(`FLOCKML_CPU_ISA=${isa}: this file passes`, () => assertFilePasses(__filename, { FLOCKML_CPU_ISA: isa }));
  }
}

test.run();
