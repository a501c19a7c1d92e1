import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, fixtures, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;

test('maxPool2d (padding, ceil mode) matches PyTorch forward and backward', () => {
  const c = fixtures.max_pool2d;
  const { kernelSize, ...o } = c.options;
  checkCase(c, ({ x }) => F.maxPool2d(x, kernelSize, o));
});

test('avgPool2d without padded cells matches PyTorch', () => {
  const c = fixtures.avg_pool2d;
  const { kernelSize, ...o } = c.options;
  checkCase(c, ({ x }) => F.avgPool2d(x, kernelSize, o));
});

test('adaptiveAvgPool2d with uneven bins matches PyTorch', () => {
  const c = fixtures.adaptive_avg_pool2d;
  checkCase(c, ({ x }) => F.adaptiveAvgPool2d(x, c.options.outputSize));
});

test('pooling gradients pass a numerical check in f64', () => {
  fl.manualSeed(2);
  const r = fl.randn([1, 2, 2, 2], { dtype: 'f64' });
  numericGradCheck((x) => F.maxPool2d(x, 2).mul(r).sum(), fl.randn([1, 2, 4, 5], { dtype: 'f64' }));
  numericGradCheck((x) => F.avgPool2d(x, 3, { stride: 2, padding: 1 }).mul(r).sum(), fl.randn([1, 2, 4, 3], { dtype: 'f64' }));
  numericGradCheck((x) => F.adaptiveAvgPool2d(x, 2).mul(r).sum(), fl.randn([1, 2, 5, 3], { dtype: 'f64' }));
});

test('maxPool2dWithIndices returns flat argmax positions', () => {
  const x = fl.tensor(
    [
      [
        [
          [1, 5],
          [3, 2],
        ],
      ],
    ],
    { dtype: 'f32' },
  );
  const [y, idx] = F.maxPool2dWithIndices(x, 2);
  assert.equal(y.toArray(), [[[[5]]]]);
  assert.equal(idx.toArray(), [[[[1]]]]);
});

// Windows entirely inside the input take the unrolled 2×2 / 3×3 / general branch-free paths:
// check values and first-maximum indices (ties, NaN, all -inf windows) against a plain reference.
for (const [k, stride, h, w] of [
  [2, 2, 6, 8],
  [3, 3, 9, 7],
  [3, 1, 5, 6],
  [2, 1, 4, 5],
  [4, 2, 9, 10],
]) {
  test(`maxPool2d ${k}x${k} stride ${stride} without padding matches a reference (ties, NaN, -inf)`, () => {
    fl.manualSeed(k * 10 + stride);
    const vals = Array.from(fl.randint(-3, 3, [2, 3, h, w]).to('f64').dataSync() as Float64Array);
    vals[5] = NaN;
    vals[h * w] = NaN; // plane 1: NaN first in its window, larger values after it
    for (let i = 0; i < k; i++) for (let j = 0; j < k; j++) vals[2 * h * w + i * w + j] = -Infinity; // plane 2's first window
    const x = fl.tensor(Float64Array.from(vals), { shape: [2, 3, h, w] });
    const [y, idx] = fl.nn.functional.maxPool2dWithIndices(x, k, { stride });
    const oh = Math.floor((h - k) / stride) + 1,
      ow = Math.floor((w - k) / stride) + 1;
    const got = y.dataSync() as Float64Array,
      gotIdx = Array.from(idx.dataSync() as BigInt64Array, Number);
    for (let p = 0; p < 6; p++)
      for (let oy = 0; oy < oh; oy++)
        for (let ox = 0; ox < ow; ox++) {
          let best = -Infinity,
            at = -1,
            first = -1;
          for (let i = 0; i < k; i++)
            for (let j = 0; j < k; j++) {
              const pos = (oy * stride + i) * w + ox * stride + j,
                v = vals[p * h * w + pos];
              if (first < 0) first = pos;
              if (v > best || Number.isNaN(v)) {
                best = v;
                at = pos;
              } // PyTorch: a NaN wins and stays
            }
          if (at < 0) at = first;
          const o = p * oh * ow + oy * ow + ox;
          assert.ok(Object.is(got[o], best) || got[o] === best, `value ${o}: ${got[o]} vs ${best}`);
          assert.is(gotIdx[o], at, `index ${o}`);
        }
  });
}

test('pool layers and errors', () => {
  assert.equal([...new fl.nn.MaxPool2d(2).forward(fl.zeros([2, 3, 7, 7])).shape], [2, 3, 3, 3]);
  assert.equal([...new fl.nn.AdaptiveAvgPool2d(1).forward(fl.zeros([2, 3, 7, 7])).shape], [2, 3, 1, 1]);
  throwsCode(() => F.maxPool2d(fl.zeros([3, 7, 7]), 2), 'ERR_SHAPE');
  throwsCode(() => F.maxPool2d(fl.zeros([1, 1, 1, 1]), 2), 'ERR_SHAPE');
  throwsCode(() => F.maxPool2d(fl.zeros([1, 1, 4, 4]), 2, { padding: 2 }), 'ERR_RANGE', RangeError);
});

test.run();
