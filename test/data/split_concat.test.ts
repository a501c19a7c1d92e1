import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';
import { caught } from '../helpers/errors';

// biome-ignore lint/suspicious/noExplicitAny: fixture cases
const fixtures: any = JSON.parse(readFileSync(join(__dirname, '../fixtures/optim_extra_fixtures.json'), 'utf8'));

/** A dataset of its own indices: sample i is i. */
const range = (n: number): fl.data.Dataset<number> => ({ length: n, get: (i) => i });
const all = <T>(d: fl.data.Dataset<T>) => Array.from({ length: d.length }, (_, i) => d.get(i) as T);

test("randomSplit's sizes follow PyTorch 1.13 (fractions: floor, then the remainder round robin; lengths as given)", () => {
  for (const c of fixtures.randomSplit) {
    const parts = fl.data.randomSplit(range(c.n), c.lengths, { seed: 1 });
    assert.equal(
      parts.map((p) => p.length),
      c.sizes,
      `${c.n} into ${JSON.stringify(c.lengths)}`,
    );
  }
});

test('randomSplit partitions the dataset: disjoint, complete, shuffled, the same for the same seed', () => {
  const parts = fl.data.randomSplit(range(100), [0.7, 0.2, 0.1], { seed: 42 });
  const seen = parts.flatMap((p) => all(p));
  assert.equal(
    [...seen].sort((a, b) => a - b),
    Array.from({ length: 100 }, (_, i) => i),
  );
  assert.not.equal(
    seen,
    Array.from({ length: 100 }, (_, i) => i),
  );
  const again = fl.data.randomSplit(range(100), [0.7, 0.2, 0.1], { seed: 42 }).flatMap((p) => all(p));
  assert.equal(again, seen);
  const other = fl.data.randomSplit(range(100), [0.7, 0.2, 0.1], { seed: 43 }).flatMap((p) => all(p));
  assert.not.equal(other, seen);
  // Without a seed the global generator decides: fl.manualSeed makes it reproducible.
  fl.manualSeed(5);
  const a = fl.data.randomSplit(range(20), [10, 10]).map((p) => [...p.indices]);
  fl.manualSeed(5);
  const b = fl.data.randomSplit(range(20), [10, 10]).map((p) => [...p.indices]);
  assert.equal(a, b);
});

test('randomSplit refuses bad lengths and options with codes', () => {
  throwsCode(() => fl.data.randomSplit(range(10), [3, 6]), 'ERR_RANGE');
  throwsCode(() => fl.data.randomSplit(range(10), [0.5, 0.6]), 'ERR_RANGE');
  throwsCode(() => fl.data.randomSplit(range(10), [1.2, -0.2]), 'ERR_RANGE');
  throwsCode(() => fl.data.randomSplit(range(10), [2.5, 7.5]), 'ERR_RANGE');
  throwsCode(() => fl.data.randomSplit(range(10), []), 'ERR_ARG');
  throwsCode(() => fl.data.randomSplit(range(10), ['5', 5] as never), 'ERR_ARG');
  const e = caught(() => fl.data.randomSplit(range(10), [5, 5], { generator: {} } as never));
  assert.is(e.code, 'ERR_ARG');
  assert.match(e.message, /seed/);
  throwsCode(() => fl.data.randomSplit(range(10), [5, 5], { seed: -1 }), 'ERR_ARG');
  throwsCode(() => fl.data.randomSplit({} as never, [5, 5]), 'ERR_ARG');
});

test('Subset: its indices of the dataset, in order; range-checked', () => {
  const s = new fl.data.Subset(range(10), [7, 2, 2, 9]);
  assert.is(s.length, 4);
  assert.equal(all(s), [7, 2, 2, 9]);
  throwsCode(() => s.get(4), 'ERR_INDEX');
  throwsCode(() => s.get(-1), 'ERR_INDEX');
  throwsCode(() => s.get(1.5), 'ERR_ARG');
  throwsCode(() => new fl.data.Subset(range(3), [3]), 'ERR_INDEX');
  throwsCode(() => new fl.data.Subset(range(3), 2 as never), 'ERR_ARG');
});

test('ConcatDataset: the datasets one after another, cumulativeSizes as PyTorch', () => {
  const c = new fl.data.ConcatDataset([range(3), { length: 0, get: () => -1 }, { length: 2, get: (i: number) => 100 + i }]);
  assert.is(c.length, 5);
  assert.equal([...c.cumulativeSizes], [3, 3, 5]);
  assert.equal(all(c), [0, 1, 2, 100, 101]);
  throwsCode(() => c.get(5), 'ERR_INDEX');
  throwsCode(() => new fl.data.ConcatDataset([]), 'ERR_ARG');
  throwsCode(() => new fl.data.ConcatDataset([range(2), 3 as never]), 'ERR_ARG');
});

test('the DataLoader batches Subsets and ConcatDatasets of TensorDatasets by gathers, equal to sample by sample', () => {
  const x = fl.arange(0, 20, { dtype: 'f32' }).reshape([10, 2]);
  const y = fl.arange(0, 10, { dtype: 'i64' });
  const ds = new fl.data.TensorDataset(x, y);
  const [train] = fl.data.randomSplit(ds, [0.6, 0.4], { seed: 3 });
  const both = new fl.data.ConcatDataset([train, new fl.data.Subset(ds, [9, 0])]);
  const fast = [...new fl.data.DataLoader(both, { batchSize: 4 })];
  const slow = [...new fl.data.DataLoader(both, { batchSize: 4, collate: (s) => fl.data.defaultCollate(s) as fl.Tensor[] })];
  assert.is(fast.length, 2);
  fast.forEach((b, k) => {
    const s = slow[k] as fl.Tensor[];
    assert.equal(b[0].toArray(), s[0].toArray());
    assert.equal(b[1].toArray(), s[1].toArray());
    assert.is(b[1].dtype, 'i64');
  });
  const labels = fast.flatMap((b) => b[1].toArray() as number[]);
  assert.equal(labels, [...train.indices, 9, 0]);
});

test.run();
