import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { expectError } from '../helpers/reference';
import { values } from '../helpers/values';

const x = () => fl.arange(24, undefined, 1, { dtype: 'f32' }).reshape(2, 3, 4);

test('reshape/view share storage, infer -1 and reject bad sizes', () => {
  const a = x();
  assert.equal(a.view(-1, 4).shape, [6, 4]);
  assert.equal(a.reshape([4, 6]).shape, [4, 6]);
  const before = fl.memory().cpu.storages;
  a.reshape(24);
  assert.is(fl.memory().cpu.storages, before, 'a view allocates no storage');
  expectError(() => a.reshape(5, 5), RangeError, 'ERR_SHAPE', /\[2,3,4\]/);
  expectError(() => a.reshape(-1, -1), RangeError, 'ERR_SHAPE');
});

test('flatten, squeeze, unsqueeze', () => {
  assert.equal(x().flatten().shape, [24]);
  assert.equal(x().flatten(1).shape, [2, 12]);
  assert.equal(fl.zeros([1, 3, 1]).squeeze().shape, [3]);
  assert.equal(fl.zeros([1, 3, 1]).squeeze(0).shape, [3, 1]);
  assert.equal(fl.zeros([3]).unsqueeze(0).unsqueeze(-1).shape, [1, 3, 1]);
});

test('transpose and permute copy with the right element order', () => {
  const t = x().transpose(0, 2);
  assert.equal(t.shape, [4, 3, 2]);
  const v = values(t);
  assert.is(v[1], 12); // t[0,0,1] = x[1,0,0]
  assert.is(v[2], 4); // t[0,1,0] = x[0,1,0]
  const p = x().permute(1, 2, 0);
  assert.equal(p.shape, [3, 4, 2]);
  assert.equal(values(p).slice(0, 4), [0, 12, 1, 13]);
  expectError(() => x().permute(0, 0, 1), TypeError, 'ERR_ARG');
});

test('transposes of the last two dims (tiled copy): every dtype, odd sizes, batched, from an offset view', () => {
  // A host reference: out[..., i, j] = in[..., j, i].
  const ref = (data: number[], planes: number, r: number, c: number) => {
    const out: number[] = [];
    for (let p = 0; p < planes; p++) for (let j = 0; j < c; j++) for (let i = 0; i < r; i++) out.push(data[p * r * c + i * c + j]);
    return out;
  };
  for (const dtype of ['f32', 'f64', 'bf16', 'f16', 'i64', 'i32', 'u8', 'bool'] as const) {
    for (const [planes, r, c] of [
      [1, 37, 53],
      [3, 70, 9],
      [2, 1, 40],
      [1, 129, 66],
    ]) {
      const n = planes * r * c;
      const data = Array.from({ length: n }, (_, k) => (dtype === 'bool' ? k % 3 === 0 : (k * 7) % 101)) as number[];
      const t = fl.tensor(data, { dtype }).reshape([planes, r, c]);
      const got = values(t.transpose(1, 2));
      assert.equal(got, ref(values(t), planes, r, c), `${dtype} [${planes},${r},${c}]`);
    }
  }
  // From a view at an offset (rows 1..2 of a [4, 33, 17] tensor).
  const base = fl.arange(0, 4 * 33 * 17, 1, { dtype: 'f32' }).reshape([4, 33, 17]);
  const view = base.narrow(0, 1, 2);
  assert.equal(values(view.transpose(1, 2)), ref(values(view), 2, 33, 17));
  assert.equal(values(base.transpose(0, 1).transpose(1, 2)), values(base.permute([1, 2, 0])), 'permute through two transposes');
});

test('expand broadcasts', () => {
  const e = fl.tensor([[1], [2]], { dtype: 'f32' }).expand(2, 3);
  assert.equal(values(e), [1, 1, 1, 2, 2, 2]);
  assert.equal(fl.tensor([1, 2], { dtype: 'f32' }).expand(3, -1).shape, [3, 2]);
  expectError(() => fl.ones([2]).expand(3), RangeError, 'ERR_SHAPE');
});

test('narrow along dim 0 is a view; along other dims a copy', () => {
  const a = x();
  assert.equal(values(a.narrow(0, 1, 1)).slice(0, 3), [12, 13, 14]);
  assert.equal(values(a.narrow(2, 1, 2)).slice(0, 4), [1, 2, 5, 6]);
  assert.equal(values(a.slice(1, -1)).slice(0, 4), [8, 9, 10, 11]);
  expectError(() => a.narrow(1, 2, 5), RangeError, 'ERR_INDEX');
});

test('select(dim, i) drops the dim as torch.select; negative dim and index; gradient scatters back', () => {
  const a = x();
  assert.equal(a.select(1, 2).toArray(), [
    [8, 9, 10, 11],
    [20, 21, 22, 23],
  ]);
  assert.equal(a.select(-1, -1).toArray(), [
    [3, 7, 11],
    [15, 19, 23],
  ]);
  assert.equal(a.select(0, 1).shape, [3, 4]);
  assert.equal(fl.select(fl.tensor([5, 6, 7]), 0, -3).shape, []);
  assert.is(fl.tensor([5, 6, 7]).select(0, 2).itemSync(), 7);
  const w = x().requiresGrad_();
  w.select(-2, 1)
    .mul(fl.tensor([1, 2, 3, 4]))
    .sum()
    .backward();
  const g = w.grad?.toArray() as number[][][];
  assert.equal(g[0], [
    [0, 0, 0, 0],
    [1, 2, 3, 4],
    [0, 0, 0, 0],
  ]);
  assert.equal(g[1], g[0]);
  expectError(() => a.select(1, 3), RangeError, 'ERR_INDEX', /index 3/);
  expectError(() => a.select(1, -4), RangeError, 'ERR_INDEX');
  expectError(() => a.select(3, 0), RangeError, 'ERR_INDEX');
  expectError(() => a.select(0, 0.5), TypeError, 'ERR_ARG');
  expectError(() => fl.tensor(3).select(0, 0), RangeError, 'ERR_INDEX');
});

test('cat, stack, split, chunk', () => {
  const a = fl.tensor([[1, 2]], { dtype: 'f32' }),
    b = fl.tensor(
      [
        [3, 4],
        [5, 6],
      ],
      { dtype: 'f32' },
    );
  assert.equal(values(fl.cat([a, b])), [1, 2, 3, 4, 5, 6]);
  assert.equal(values(fl.cat([b, b], 1)), [3, 4, 3, 4, 5, 6, 5, 6]);
  assert.equal(fl.stack([b, b], 2).shape, [2, 2, 2]);
  assert.equal(values(fl.stack([b, b], 2)), [3, 3, 4, 4, 5, 5, 6, 6]);
  const parts = fl.arange(7).split(3);
  assert.equal(
    parts.map((p) => p.shape[0]),
    [3, 3, 1],
  );
  assert.equal(
    fl
      .arange(7)
      .split([2, 5])
      .map((p) => values(p)),
    [
      [0, 1],
      [2, 3, 4, 5, 6],
    ],
  );
  assert.equal(
    fl
      .arange(6)
      .chunk(4)
      .map((p) => p.shape[0]),
    [2, 2, 2],
  );
  expectError(() => fl.cat([a, fl.ones([1, 3])]), RangeError, 'ERR_SHAPE');
  expectError(() => fl.cat([a, fl.ones([1, 2], { dtype: 'f64' })]), TypeError, 'ERR_DTYPE');
});

test.run();
