import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { groupOf } from '../helpers/reference';
import { values } from '../helpers/values';

/**
 * bf16/f16 sum and mean accumulate in f32 across every reduced dimension and round once at the end,
 * also over scattered dims (a conv bias gradient's [0, 2, 3]) that run in stages: each result must be
 * within half a unit in the last place (one rounding) of the f64 reduction of the same stored values,
 * plus the f32 accumulation's own (much smaller) error.
 */

const bits = { bf16: 8, f16: 11 } as const;

/** Half a unit in the last place of v in a format with `p` significand bits (normal range). */
function halfUlp(v: number, p: number): number {
  if (v === 0) return 0;
  return 2 ** (Math.floor(Math.log2(Math.abs(v))) - p);
}

/** f64 sums (or means) of the kept-dims groups of a row-major array. */
function refReduce(values: number[], shape: number[], dims: number[], mean: boolean): { value: number[]; abs: number[] } {
  const outShape = shape.map((s, i) => (dims.includes(i) ? 1 : s));
  const n = outShape.reduce((a, b) => a * b, 1);
  const value = new Array<number>(n).fill(0);
  const abs = new Array<number>(n).fill(0);
  const count = values.length / n;
  const group = groupOf(shape, dims);
  values.forEach((v, lin) => {
    const o = group(lin);
    value[o] += v;
    abs[o] += Math.abs(v);
  });
  if (mean)
    for (let i = 0; i < n; i++) {
      value[i] /= count;
      abs[i] /= count;
    }
  return { value, abs };
}

/** Worst |got − ref| / (one rounding + f32 accumulation bound) over the elements: ≤ 1 passes. */
function worstRatio(got: number[], ref: { value: number[]; abs: number[] }, p: number, terms: number): number {
  let worst = 0;
  for (let i = 0; i < got.length; i++) {
    const bound = halfUlp(ref.value[i], p) + terms * 2 ** -24 * ref.abs[i];
    const r = Math.abs(got[i] - ref.value[i]) / bound;
    if (!(r <= worst)) worst = r;
  }
  return worst;
}

const cases: [number[], number[]][] = [
  [
    [16, 8, 12, 12],
    [0, 2, 3],
  ],
  [
    [6, 5, 40],
    [0, 2],
  ],
  [
    [3, 4, 5, 6, 7],
    [0, 2, 4],
  ],
  [
    [32, 3, 50],
    [0, 1, 2],
  ],
  [[64, 9], [0]],
];

for (const dtype of ['bf16', 'f16'] as const) {
  for (const [shape, dims] of cases) {
    test(`${dtype} sum and mean over ${JSON.stringify(dims)} of ${JSON.stringify(shape)} round once`, () => {
      fl.manualSeed(shape.reduce((a, b) => a * 5 + b, dims.length));
      // A shifted mean keeps the sums away from zero, where a relative bound says little.
      const x = fl.randn(shape).add(0.3).to(dtype);
      const stored = values(x.to('f64'));
      const terms = dims.reduce((a, d) => a * shape[d], 1);
      for (const mean of [false, true]) {
        const got = mean ? x.mean(dims) : x.sum(dims);
        assert.is(got.dtype, dtype);
        const want = refReduce(stored, shape, dims, mean);
        const r = worstRatio(values(got.to('f64')), want, bits[dtype], terms);
        assert.ok(r <= 1, `${mean ? 'mean' : 'sum'}: error ${r}x one rounding`);
        const kept = mean ? x.mean(dims, true) : x.sum(dims, true);
        assert.equal(
          kept.shape,
          shape.map((s, i) => (dims.includes(i) ? 1 : s)),
        );
        assert.equal(values(kept), values(got));
      }
    });
  }
}

test('rounding between the stages of a bf16 sum would fail the bound (the check can fail)', () => {
  fl.manualSeed(5);
  const shape = [16, 8, 12, 12];
  // Image n is shifted by ±2 (alternating): the per-image partial sums are large and cancel, so
  // rounding each of them to bf16 costs far more than one rounding of the small total.
  const shift = fl.tensor(Array.from({ length: 16 }, (_, n) => (n % 2 ? -2 : 2))).reshape([16, 1, 1, 1]);
  const x = fl.randn(shape).add(shift).to('bf16');
  const want = refReduce(values(x.to('f64')), shape, [0, 2, 3], false);
  // The old staged order: sum over [2, 3] rounded to bf16, then over [0].
  const staged = x.sum([2, 3], true).sum([0]).reshape([8]);
  assert.ok(worstRatio(values(staged.to('f64')), want, 8, 16 * 144) > 1, 'the staged bf16 sum should exceed one rounding');
  assert.ok(worstRatio(values(x.sum([0, 2, 3]).to('f64')), want, 8, 16 * 144) <= 1);
});

test('an f32 sum over scattered dims is unchanged (still f32, no cast)', () => {
  fl.manualSeed(6);
  const x = fl.randn([4, 3, 5, 2]);
  const got = x.sum([0, 2]);
  assert.is(got.dtype, 'f32');
  const want = refReduce(values(x), [4, 3, 5, 2], [0, 2], false).value;
  const g = values(got);
  for (let i = 0; i < g.length; i++) assert.ok(Math.abs(g[i] - want[i]) <= 1e-5 * (1 + Math.abs(want[i])));
});

test.run();
