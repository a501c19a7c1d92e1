import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';
import { gradcheck, rnd } from '../helpers/gradcheck';

const seq = (shape: number[], dtype: fl.DType = 'f64') =>
  fl
    .arange(
      shape.reduce((a, b) => a * b, 1),
      undefined,
      1,
      { dtype },
    )
    .reshape(shape);

/** Reference tril/triu over the last two dims of a row-major [batch, r, c] block. */
function refTri(v: number[], shape: number[], k: number, upper: boolean): number[] {
  const [r, c] = shape.slice(-2);
  return v.map((x, e) => {
    const j = e % c,
      i = Math.floor(e / c) % r;
    return (upper ? j - i >= k : j - i <= k) ? x : 0;
  });
}

test('tril/triu match the reference for diagonals, batches, dtypes and empty tensors', () => {
  for (const shape of [
    [3, 4],
    [2, 3, 5],
    [4, 1],
    [0, 3],
  ])
    for (const k of [-2, -1, 0, 1, 3])
      for (const dtype of ['f32', 'f64', 'i64', 'i32'] as fl.DType[]) {
        const x = seq(shape, dtype).add(1);
        assert.equal(values(fl.tril(x, k)), refTri(values(x), shape, k, false), `tril ${shape} ${k} ${dtype}`);
        assert.equal(values(x.triu(k)), refTri(values(x), shape, k, true), `triu ${shape} ${k} ${dtype}`);
      }
  const b = fl.ones([2, 2], { dtype: 'bool' });
  assert.equal(values(b.tril()), [1, 0, 1, 1]);
  expectError(() => fl.tril(fl.ones([3])), RangeError, 'ERR_SHAPE', /tril.*\[3\]/);
  expectError(() => fl.triu(fl.ones([3, 3]), 0.5), TypeError, 'ERR_ARG');
});

test('tril/triu gradients', () => {
  assert.is(
    gradcheck(([x]) => fl.tril(x, -1), [rnd([3, 4])]),
    null,
  );
  assert.is(
    gradcheck(([x]) => fl.triu(x, 1), [rnd([2, 3, 3])]),
    null,
  );
});

test('flip reverses the named dims (negative dims, several dims, empty)', () => {
  const x = seq([2, 3]);
  assert.equal(values(x.flip(0)), [3, 4, 5, 0, 1, 2]);
  assert.equal(values(x.flip(-1)), [2, 1, 0, 5, 4, 3]);
  assert.equal(values(fl.flip(x, [0, 1])), [5, 4, 3, 2, 1, 0]);
  assert.equal(values(x.flip([])), values(x));
  assert.equal(fl.zeros([0, 2]).flip(0).shape, [0, 2]);
  assert.equal(values(seq([3], 'i64').flip(0)), [2, 1, 0]);
  expectError(() => x.flip([0, -2]), TypeError, 'ERR_ARG', /more than once/);
  expectError(() => x.flip(2), RangeError, 'ERR_INDEX');
  assert.is(
    gradcheck(([t]) => t.flip([0, 2]), [rnd([2, 3, 2])]),
    null,
  );
});

test('roll along dims, flattened, with negative and large shifts', () => {
  const x = seq([2, 3]);
  assert.equal(values(x.roll(1, 1)), [2, 0, 1, 5, 3, 4]);
  assert.equal(values(x.roll(-1, 1)), [1, 2, 0, 4, 5, 3]);
  assert.equal(values(x.roll(7, 1)), [2, 0, 1, 5, 3, 4]);
  assert.equal(values(x.roll(1)), [5, 0, 1, 2, 3, 4]);
  assert.equal(values(fl.roll(x, [1, 1], [0, 1])), [5, 3, 4, 2, 0, 1]);
  assert.equal(values(fl.roll(x, [1, 1], [1, 1])), [1, 2, 0, 4, 5, 3]);
  assert.equal(fl.zeros([0, 3]).roll(2, 1).shape, [0, 3]);
  expectError(() => x.roll([1, 2], 0), TypeError, 'ERR_ARG', /same length/);
  expectError(() => x.roll([1, 2]), TypeError, 'ERR_ARG');
  assert.is(
    gradcheck(([t]) => t.roll([2, -1], [0, 1]), [rnd([3, 4])]),
    null,
  );
  assert.is(
    gradcheck(([t]) => t.roll(5), [rnd([2, 3])]),
    null,
  );
});

test('repeat and tile follow torch (added leading dims, zero repeats)', () => {
  const x = seq([2, 2]);
  assert.equal(fl.repeat(x, [2, 3]).shape, [4, 6]);
  assert.equal(values(x.repeat(1, 2)), [0, 1, 0, 1, 2, 3, 2, 3]);
  assert.equal(values(x.repeat(2, 1, 1)), [0, 1, 2, 3, 0, 1, 2, 3]);
  assert.equal(x.repeat(0, 2).shape, [0, 4]);
  assert.equal(values(seq([3]).tile([2])), [0, 1, 2, 0, 1, 2]);
  assert.equal(values(x.tile(2)), [0, 1, 0, 1, 2, 3, 2, 3]);
  assert.equal(x.tile([2, 1, 1]).shape, [2, 2, 2]);
  expectError(() => x.repeat(2), RangeError, 'ERR_SHAPE', /number of repeats/);
  expectError(() => x.repeat(-1, 1), RangeError, 'ERR_SHAPE');
  assert.is(
    gradcheck(([t]) => t.repeat(2, 1, 3), [rnd([2, 3])]),
    null,
  );
  assert.is(
    gradcheck(([t]) => t.tile([2]), [rnd([2, 3])]),
    null,
  );
});

test('unbind gives the slices and routes gradients back', () => {
  const x = seq([2, 3]);
  const cols = x.unbind(1);
  assert.is(cols.length, 3);
  assert.equal(values(cols[1]), [1, 4]);
  assert.equal(
    fl.unbind(x).map((t) => t.shape),
    [[3], [3]],
  );
  expectError(() => fl.unbind(fl.tensor(1)), RangeError, 'ERR_INDEX');
  assert.is(
    gradcheck(
      ([t]) => {
        const [a, , c] = t.unbind(-1);
        return a.mul(c);
      },
      [rnd([2, 3])],
    ),
    null,
  );
});

test('squeeze takes a list of dims (torch 2.0)', () => {
  const x = fl.zeros([1, 3, 1, 1]);
  assert.equal(x.squeeze([0, 2]).shape, [3, 1]);
  assert.equal(x.squeeze([-1, 1]).shape, [1, 3, 1]);
  assert.equal(fl.squeeze(x, [1]).shape, [1, 3, 1, 1]);
  expectError(() => x.squeeze([0, 0]), TypeError, 'ERR_ARG');
  expectError(() => x.squeeze([4]), RangeError, 'ERR_INDEX');
  close(values(fl.tensor([[2]]).squeeze([0, 1])), [2]);
});

test.run();
