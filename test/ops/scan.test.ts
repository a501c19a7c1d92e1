import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { gradcheck, rnd } from '../helpers/gradcheck';
import { mapLines } from '../helpers/lines';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';

fl.manualSeed(7);

const running = (line: number[], prod: boolean) => {
  let acc = prod ? 1 : 0;
  return line.map((v) => (acc = prod ? acc * v : acc + v));
};

for (const [shape, dim] of [
  [[7], 0],
  [[3, 5], 1],
  [[3, 5], 0],
  [[2, 3, 4], -2],
  [[2, 1100], 1],
  [[0, 3], 1],
  [[], 0],
] as [number[], number][]) {
  test(`cumsum/cumprod along ${dim} of ${JSON.stringify(shape)} match f64`, () => {
    const x = fl.randn(shape, { dtype: 'f64' }).mul(0.5).add(1);
    const v = values(x);
    close(
      values(x.cumsum(dim)),
      mapLines(v, shape, dim, (l) => running(l, false)),
      1e-12,
      1e-12,
      'cumsum',
    );
    close(
      values(fl.cumprod(x, dim)),
      mapLines(v, shape, dim, (l) => running(l, true)),
      1e-12,
      1e-300,
      'cumprod',
    );
    const x32 = x.to('f32');
    close(
      values(x32.cumsum(dim)),
      mapLines(values(x32), shape, dim, (l) => running(l, false)),
      1e-5,
      1e-5,
      'cumsum f32',
    );
  });
}

test('integer and bool scans give i64; dtype option converts first', () => {
  const i = fl.tensor([1, 2, 3, 4], { dtype: 'i32' });
  assert.is(i.cumsum(0).dtype, 'i64');
  assert.equal(values(i.cumsum(0)), [1, 3, 6, 10]);
  assert.equal(values(i.cumprod(0)), [1, 2, 6, 24]);
  assert.equal(values(fl.tensor([true, false, true]).cumsum(0)), [1, 1, 2]);
  const f = i.cumsum(0, { dtype: 'f64' });
  assert.is(f.dtype, 'f64');
  assert.equal(values(f), [1, 3, 6, 10]);
});

test('cumsum and cumprod gradients (f64 gradcheck), cumprod with zeros as torch', () => {
  for (const dim of [0, 1, -1]) {
    assert.is(
      gradcheck(([a]) => a.cumsum(dim), [rnd([3, 4])]),
      null,
    );
    assert.is(
      gradcheck(([a]) => a.cumprod(dim), [rnd([3, 4])]),
      null,
    );
  }
  // One zero, two zeros, a zero first and last: the analytic gradient is exact there.
  for (const vals of [
    [2, 0, 3, 4],
    [0, 2, 0, 3],
    [1.5, 2, 3, 0],
    [0, 0, 0, 1],
  ]) {
    const x = fl.tensor(vals, { dtype: 'f64' });
    assert.is(
      gradcheck(([a]) => a.cumprod(0), [x]),
      null,
      JSON.stringify(vals),
    );
  }
  // torch.cumprod([2, 0, 3, 4]).backward(ones): [1, 2+6+24, 0, 0].
  const x = fl.tensor([2, 0, 3, 4], { dtype: 'f64' }).requiresGrad_();
  x.cumprod(0).sum().backward();
  assert.equal(values(x.grad!), [1, 32, 0, 0]);
});

test('errors name the op', () => {
  expectError(() => fl.ones([2, 3]).cumsum(2), RangeError, 'ERR_INDEX', /cumsum/);
  expectError(() => fl.cumprod(fl.ones([2]), 0, { dtyp: 'f32' } as never), TypeError, 'ERR_ARG', /dtype/);
  expectError(() => fl.cumsum(3 as never, 0), TypeError, 'ERR_ARG');
});

test.run();
