import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

const x = fl.arange(10).to('f32').reshape([10, 1]);
const y = fl.arange(10);

test('TensorDataset rows and batches', () => {
  const ds = new fl.data.TensorDataset(x, y);
  assert.is(ds.length, 10);
  assert.equal(ds.get(3).map((t) => t.toArray()), [[3], 3]);
  assert.throws(() => ds.get(10), (e: { code?: string }) => e.code === 'ERR_INDEX');
  assert.throws(() => new fl.data.TensorDataset(x, fl.arange(9)), (e: { code?: string }) => e.code === 'ERR_SHAPE');
});

test('DataLoader batches in order, with dropLast', () => {
  const ds = new fl.data.TensorDataset(x, y);
  const batches = [...new fl.data.DataLoader(ds, { batchSize: 4 })] as fl.Tensor[][];
  assert.equal(batches.map((b) => b[1].toArray()), [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]);
  const dl = new fl.data.DataLoader(ds, { batchSize: 4, dropLast: true });
  assert.is(dl.length, 2);
  assert.is([...dl].length, 2);
});

test('seeded shuffle: a permutation, reproducible, new each epoch', () => {
  const ds = new fl.data.TensorDataset(x, y);
  const order = (dl: fl.data.DataLoader<fl.Tensor[]>) => ([...dl] as fl.Tensor[][]).flatMap((b) => b[1].toArray() as number[]);
  const a = new fl.data.DataLoader(ds, { batchSize: 3, shuffle: true, seed: 7 });
  const b = new fl.data.DataLoader(ds, { batchSize: 3, shuffle: true, seed: 7 });
  const e1 = order(a), e2 = order(a);
  assert.equal(e1, order(b));
  assert.equal([...e1].sort((p, q) => p - q), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.not.equal(e1, e2);
});

test('async iteration prefetches and supports async datasets with collate', async () => {
  const ds: fl.data.Dataset<{ v: number }> = { length: 5, get: async (i) => ({ v: i * 2 }) };
  const seen: number[][] = [];
  for await (const b of new fl.data.DataLoader(ds, { batchSize: 2 })) seen.push((b as { v: fl.Tensor }).v.toArray() as number[]);
  assert.equal(seen, [[0, 2], [4, 6], [8]]);
  const custom = new fl.data.DataLoader({ length: 3, get: (i: number) => i }, { batchSize: 3, collate: (xs: number[]) => xs.join(',') });
  assert.equal([...custom], ['0,1,2']);
});

test('a sampler (DistributedSampler) chooses and orders the samples', () => {
  const ds = new fl.data.TensorDataset(x, y);
  const sampler = new fl.data.DistributedSampler(ds, { numReplicas: 3, rank: 1, shuffle: false });
  const dl = new fl.data.DataLoader(ds, { batchSize: 2, sampler });
  assert.is(dl.length, 2);
  assert.equal(([...dl] as fl.Tensor[][]).flatMap((b) => b[1].toArray() as number[]), [1, 4, 7, 0]);
  assert.throws(() => new fl.data.DataLoader(ds, { sampler, shuffle: true }), (e: { code?: string }) => e.code === 'ERR_ARG');
});

test.run();
