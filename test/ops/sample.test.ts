import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { expectError } from '../helpers/reference';
import { values } from '../helpers/values';

test('randperm is a permutation, i64 by default, reproducible from the seed', () => {
  for (const n of [0, 1, 3, 127, 1025]) {
    fl.manualSeed(9);
    const p = fl.randperm(n);
    assert.is(p.dtype, 'i64');
    const v = values(p);
    assert.equal(
      [...v].sort((a, b) => a - b),
      Array.from({ length: n }, (_, i) => i),
    );
    fl.manualSeed(9);
    assert.equal(values(fl.randperm(n)), v);
  }
  fl.manualSeed(1);
  const a = values(fl.randperm(50));
  const b = values(fl.randperm(50));
  assert.not.equal(a, b);
  assert.is(fl.randperm(10, { dtype: 'f32' }).dtype, 'f32');
  assert.is(fl.randperm(4, { dtype: 'i32' }).dtype, 'i32');
});

test('multinomial with replacement follows the weights', () => {
  fl.manualSeed(4);
  const p = fl.tensor([0.1, 0, 0.6, 0.3], { dtype: 'f64' });
  const s = fl.multinomial(p, 20000, true);
  assert.equal(s.shape, [20000]);
  assert.is(s.dtype, 'i64');
  const counts = [0, 0, 0, 0];
  for (const v of values(s)) counts[v]++;
  assert.is(counts[1], 0);
  [0.1, 0, 0.6, 0.3].forEach((w, i) => assert.ok(Math.abs(counts[i] / 20000 - w) < 0.02, `category ${i}: ${counts[i]}`));
  fl.manualSeed(4);
  assert.equal(values(fl.multinomial(p, 20000, true)), values(s));
});

test('multinomial without replacement: distinct, never a zero weight, first draw follows the weights', () => {
  fl.manualSeed(8);
  const p = fl.tensor(
    [
      [1, 0, 3, 2, 4],
      [0, 5, 0, 1, 0],
    ],
    { dtype: 'f32' },
  );
  const s = p.multinomial(2);
  assert.equal(s.shape, [2, 2]);
  const v = values(s);
  assert.ok(v[0] !== v[1] && v[0] !== 1 && v[1] !== 1);
  assert.equal([...v.slice(2)].sort(), [1, 3]);
  const first = [0, 0, 0, 0, 0];
  const w = fl.tensor([1, 0, 3, 2, 4]);
  for (const k of values(fl.multinomial(w.unsqueeze(0).expand([4000, 5]), 1))) first[k]++;
  [0.1, 0, 0.3, 0.2, 0.4].forEach((q, i) => assert.ok(Math.abs(first[i] / 4000 - q) < 0.03, `category ${i}: ${first[i]}`));
  assert.equal([...values(fl.multinomial(w, 4))].sort(), [0, 2, 3, 4]);
});

test('bad weights and arguments are refused with a code', () => {
  // Weights are checked on the stream: the next sync point rejects (test/ops/sample_async.test.ts).
  const drawn = (p: fl.Tensor, n: number) => () => fl.multinomial(p, n).dataSync();
  expectError(drawn(fl.tensor([0.5, -0.1]), 1), RangeError, 'ERR_RANGE', /^multinomial: .*non-negative, got -0.1/);
  expectError(drawn(fl.tensor([0.5, Number.NaN]), 1), RangeError, 'ERR_RANGE', /finite/);
  expectError(
    drawn(
      fl.tensor([
        [0.5, 1],
        [0, 0],
      ]),
      1,
    ),
    RangeError,
    'ERR_RANGE',
    /positive sum \(row 1/,
  );
  expectError(drawn(fl.tensor([0.5, 0, 0]), 2), RangeError, 'ERR_RANGE', /row 0 has only 1 non-zero/);
  expectError(() => fl.multinomial(fl.tensor([0.5, 1]), 3), RangeError, 'ERR_RANGE', /without replacement/);
  expectError(() => fl.multinomial(fl.tensor([1, 2], { dtype: 'i64' }), 1), TypeError, 'ERR_DTYPE');
  expectError(() => fl.multinomial(fl.ones([2, 2, 2]), 1), RangeError, 'ERR_SHAPE');
  expectError(() => fl.randperm(-1), RangeError, 'ERR_RANGE');
  expectError(() => fl.randperm(300, { dtype: 'u8' }), RangeError, 'ERR_RANGE');
  expectError(() => fl.randperm(3, { dtyp: 'i64' } as never), TypeError, 'ERR_ARG');
});

test.run();
