import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { values } from '../helpers/values';

const F = fl.nn.functional;

/**
 * The CPU pooling kernels pool bf16 and f16 planes themselves, comparing and summing in f32 and
 * rounding each result once. That must be exactly what widening to f32, pooling and rounding back
 * gives: forward values, argmax indices and input gradients, bit for bit, over the 2×2 stride-2
 * fast path (odd sizes: a cropped last row and column), overlapping windows (gradients summed from
 * several outputs), padding, dilation, ceil mode, NaN inputs, and average and adaptive pooling.
 */
interface Case {
  name: string;
  shape: number[];
  fn: (x: fl.Tensor) => fl.Tensor;
}

const cases: Case[] = [
  { name: 'max 2x2 stride 2, odd sizes', shape: [3, 5, 9, 11], fn: (x) => F.maxPool2d(x, 2) },
  { name: 'max 2x2 stride 2, wide rows', shape: [2, 3, 8, 70], fn: (x) => F.maxPool2d(x, 2) },
  {
    name: 'max 3x3 stride 1 padding 1 (overlapping windows)',
    shape: [2, 4, 7, 6],
    fn: (x) => F.maxPool2d(x, 3, { stride: 1, padding: 1 }),
  },
  {
    name: 'max 3x2 stride 2, dilation 2, ceil mode',
    shape: [2, 3, 11, 10],
    fn: (x) => F.maxPool2d(x, [3, 2], { stride: 2, dilation: 2, padding: [1, 1], ceilMode: true }),
  },
  { name: 'max 3x3 stride 2 inside', shape: [2, 3, 9, 9], fn: (x) => F.maxPool2d(x, 3, { stride: 2 }) },
  { name: 'avg 3x3 stride 1 padding 1', shape: [2, 4, 7, 6], fn: (x) => F.avgPool2d(x, 3, { stride: 1, padding: 1 }) },
  {
    name: 'avg 3x3 stride 2, padding excluded, ceil mode',
    shape: [2, 3, 8, 9],
    fn: (x) => F.avgPool2d(x, 3, { stride: 2, padding: 1, ceilMode: true, countIncludePad: false }),
  },
  { name: 'adaptive avg to 3x4', shape: [2, 3, 7, 10], fn: (x) => F.adaptiveAvgPool2d(x, [3, 4]) },
];

for (const dtype of ['bf16', 'f16'] as const)
  for (const c of cases) {
    test(`${c.name} on ${dtype}: the widened f32 pooling, rounded, bit for bit`, () => {
      fl.manualSeed(c.shape.reduce((a, b) => a * 31 + b, 7));
      const x = fl.randn(c.shape).to(dtype);
      const lo = x.clone().requiresGrad_();
      const hi = x.to('f32').requiresGrad_();
      const yLo = c.fn(lo);
      const yHi = c.fn(hi);
      assert.is(yLo.dtype, dtype);
      assert.equal(values(yLo), values(yHi.to(dtype)), 'forward');
      const gy = fl.randn([...yLo.shape]).to(dtype);
      yLo.backward(gy);
      yHi.backward(gy.to('f32'));
      assert.is(lo.grad?.dtype, dtype);
      assert.equal(values(lo.grad as fl.Tensor), values((hi.grad as fl.Tensor).to(dtype)), 'input gradient');
    });
  }

for (const dtype of ['bf16', 'f16'] as const)
  test(`max pooling on ${dtype}: argmax indices as f32's, and a NaN is taken and kept`, () => {
    fl.manualSeed(5);
    const vals = Float32Array.from(fl.randn([1, 2, 6, 7]).dataSync() as Float32Array);
    vals[3] = Number.NaN; // window (0, 1) of the 2×2 pool, at its second element
    vals[2 * 7 + 5] = Number.NaN; // window (1, 2), first row
    const x = fl.tensor(vals, { shape: [1, 2, 6, 7] }).to(dtype);
    const [yLo, iLo] = F.maxPool2dWithIndices(x, 2);
    const [yHi, iHi] = F.maxPool2dWithIndices(x.to('f32'), 2);
    assert.equal(values(iLo), values(iHi), 'indices');
    const y = values(yLo.to('f32'));
    assert.ok(Number.isNaN(y[1]) && Number.isNaN(y[3 + 2]), `NaN windows: ${y.slice(0, 6)}`);
    assert.equal(values(yLo), values(yHi.to(dtype)));
  });

for (const dtype of ['bf16', 'f16'] as const)
  test(`max pooling gradient on ${dtype}: a -0 and a NaN in the output gradient land as f32's sum of them`, () => {
    fl.manualSeed(9);
    const x = fl.randn([1, 2, 6, 8]).to(dtype);
    const gvals = Float32Array.from(fl.randn([1, 2, 3, 4]).dataSync() as Float32Array);
    gvals[1] = -0;
    gvals[6] = Number.NaN;
    const gy = fl.tensor(gvals, { shape: [1, 2, 3, 4] }).to(dtype);
    const lo = x.clone().requiresGrad_();
    const hi = x.to('f32').requiresGrad_();
    F.maxPool2d(lo, 2).backward(gy);
    F.maxPool2d(hi, 2).backward(gy.to('f32'));
    const got = values(lo.grad as fl.Tensor),
      want = values((hi.grad as fl.Tensor).to(dtype));
    assert.equal(got.map(Object.is.bind(null, -0)), want.map(Object.is.bind(null, -0)), 'signs of zero');
    assert.equal(got, want);
  });

test.run();
