import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, expectError, refMatmul } from '../helpers/reference';
import { values } from '../helpers/values';

fl.manualSeed(7);

// Sizes cross every blocking boundary of the CPU GEMM: K slices, M blocks, and N beyond one 3072-column chunk.
for (const [m, n, k] of [
  [1, 1, 1],
  [3, 5, 7],
  [17, 33, 9],
  [127, 65, 300],
  [6, 16, 256],
  [97, 200, 513],
  [13, 3100, 40],
]) {
  for (const [ta, tb] of [
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ]) {
    test(`matmul f32 ${m}x${k}·${k}x${n} transA=${ta} transB=${tb}`, () => {
      const a = fl.randn(ta ? [k, m] : [m, k]);
      const b = fl.randn(tb ? [n, k] : [k, n]);
      const c = (ta ? a.T : a).matmul(tb ? b.T : b);
      assert.equal(c.shape, [m, n]);
      close(values(c), refMatmul(values(a), values(b), m, n, k, ta, tb), 1e-4, 1e-4, 'C');
    });
  }
}

test('matmul f64 matches the reference to 1e-12', () => {
  const a = fl.randn([31, 47], { dtype: 'f64' }),
    b = fl.randn([47, 29], { dtype: 'f64' });
  close(values(a.matmul(b)), refMatmul(values(a), values(b), 31, 29, 47), 1e-12, 1e-12);
});

test('matmul bf16 and f16 accumulate in f32', () => {
  for (const dt of ['bf16', 'f16'] as const) {
    const a = fl.randn([8, 40]).to(dt),
      b = fl.randn([40, 8]).to(dt);
    const ref = refMatmul(values(a.to('f32')), values(b.to('f32')), 8, 8, 40);
    close(values(a.matmul(b).to('f32')), ref, 1e-2, 5e-2, dt);
  }
});

test('batched matmul broadcasts batch dims', () => {
  const a = fl.randn([2, 1, 3, 4]),
    b = fl.randn([5, 4, 2]);
  const c = a.matmul(b);
  assert.equal(c.shape, [2, 5, 3, 2]);
  const av = values(a),
    bv = values(b),
    cv = values(c);
  for (let i = 0; i < 2; i++)
    for (let j = 0; j < 5; j++) {
      const ref = refMatmul(av.slice(i * 12, i * 12 + 12), bv.slice(j * 8, j * 8 + 8), 3, 2, 4);
      close(cv.slice((i * 5 + j) * 6, (i * 5 + j) * 6 + 6), ref, 1e-5, 1e-5);
    }
});

test('vector products', () => {
  const v = fl.tensor([1, 2, 3], { dtype: 'f32' });
  assert.equal(v.matmul(v).shape, []);
  assert.is(v.matmul(v).itemSync(), 14);
  const m = fl.tensor(
    [
      [1, 0],
      [0, 1],
      [1, 1],
    ],
    { dtype: 'f32' },
  );
  assert.equal(values(v.matmul(m)), [4, 5]);
});

test('matmul with a zero-size inner dim gives zeros', () => {
  const c = fl.zeros([3, 0]).matmul(fl.zeros([0, 2]));
  assert.equal(values(c), [0, 0, 0, 0, 0, 0]);
});

test('matmul errors name the shapes', () => {
  expectError(() => fl.randn([2, 3]).matmul(fl.randn([4, 5])), RangeError, 'ERR_SHAPE', /\[2,3\].*\[4,5\]/);
  expectError(() => fl.arange(4).reshape(2, 2).matmul(fl.arange(4).reshape(2, 2)), TypeError, 'ERR_DTYPE');
});

test.run();
