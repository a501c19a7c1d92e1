import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { fixtureFile, throwsCode } from '../fixtures/load';
import { values } from '../helpers/values';

const fx = fixtureFile('first_hour').unique;

test('unique matches torch.unique: sorted values, inverse indices and counts, integers and floats', () => {
  for (const [name, c] of Object.entries(fx) as [string, Record<string, { shape: number[]; data: number[] } | string>][]) {
    const input = c.input as { shape: number[]; data: number[] };
    const dtype = c.dtype === 'torch.int64' ? 'i64' : 'f64';
    const x = fl.tensor(Float64Array.from(input.data), { shape: input.shape }).to(dtype);
    const r = fl.unique(x, { returnInverse: true, returnCounts: true });
    for (const k of ['values', 'inverse', 'counts'] as const) {
      const want = c[k] as { shape: number[]; data: number[] };
      const got = k === 'values' ? r.values : k === 'inverse' ? (r.inverseIndices as fl.Tensor) : (r.counts as fl.Tensor);
      assert.equal([...got.shape], want.shape, `${name} ${k} shape`);
      assert.equal(values(got), want.data, `${name} ${k}`);
    }
    assert.is(r.values.dtype, dtype);
    assert.is(r.inverseIndices?.dtype, 'i64');
    assert.is(r.counts?.dtype, 'i64');
    assert.equal(values(fl.unique(x)), (c.values as { data: number[] }).data, `${name}: values alone`);
  }
});

test('unique returns a tensor alone, or only the parts asked for', () => {
  const x = fl.tensor([2, 1, 2, 3, 1]);
  assert.ok(fl.unique(x) instanceof fl.Tensor);
  const only = fl.unique(x, { returnCounts: true });
  assert.equal(values(only.counts as fl.Tensor), [2, 2, 1]);
  assert.is(only.inverseIndices, undefined);
  assert.equal(values(fl.unique(x, { sorted: false })), [1, 2, 3]);
});

test('unique of empty, one-element, 0-d, bool, NaN inputs; no gradient', () => {
  assert.equal([...fl.unique(fl.zeros([0])).shape], [0]);
  const e = fl.unique(fl.zeros([2, 0]), { returnInverse: true, returnCounts: true });
  assert.equal([...(e.inverseIndices as fl.Tensor).shape], [2, 0]);
  assert.equal([...(e.counts as fl.Tensor).shape], [0]);
  const s = fl.unique(fl.tensor(4), { returnInverse: true });
  assert.equal([...(s.inverseIndices as fl.Tensor).shape], []);
  assert.equal(values(fl.unique(fl.tensor([true, false, true]))), [0, 1]);
  assert.equal(values(fl.unique(fl.tensor([Number.NaN, 1, Number.NaN]))), [1, Number.NaN, Number.NaN]);
  const x = fl.randn([4]).requiresGrad_();
  assert.is(fl.unique(x).requiresGrad, false);
});

test('unique: dim and unknown options are ERR_ARG', () => {
  throwsCode(() => fl.unique(fl.tensor([1, 2]), { dim: 0 }), 'ERR_ARG');
  throwsCode(() => fl.unique(fl.tensor([1, 2]), { return_counts: true } as never), 'ERR_ARG');
  throwsCode(() => fl.unique(fl.tensor([1, 2]), { returnCounts: 1 as never }), 'ERR_ARG');
  throwsCode(() => fl.unique([1, 2] as never), 'ERR_ARG');
});

test.run();
