import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { caught } from '../helpers/errors';

/** A regression set: x a feature tensor, y a float target; samples 4..7 happen to hold whole numbers. */
const regression: fl.data.Dataset<{ x: fl.Tensor; y: number }> = {
  length: 12,
  get: (i) => ({ x: fl.tensor([i / 10, 1 - i / 10]), y: i >= 4 && i < 8 ? i : i + 0.5 }),
};

test('a float target whose values in one batch are all whole numbers stays f32 for the whole epoch (the bug: i64 mid-epoch)', () => {
  const model = new fl.nn.Linear(2, 1);
  const readout = new fl.nn.Linear(1, 1);
  const loader = new fl.data.DataLoader(regression, { batchSize: 4 });
  const dtypes: string[] = [];
  for (const { x, y } of loader) {
    dtypes.push((y as fl.Tensor).dtype);
    // What failed: linear/mse with an i64 target ("input and weight must be floating tensors").
    const loss = fl.nn.functional.mseLoss(model.forward(x).squeeze(1), y as fl.Tensor);
    loss.backward();
    // The reported failure: the field fed to a layer ("linear: input and weight must be floating tensors, got i64 and f32").
    readout.forward((y as fl.Tensor).unsqueeze(1));
  }
  assert.equal(dtypes, ['f32', 'f32', 'f32']);
});

test('the dtype holds across epochs and shuffles: whole-number batches of an f32 field stay f32', () => {
  const loader = new fl.data.DataLoader(regression, { batchSize: 4, shuffle: true, seed: 3 });
  for (let epoch = 0; epoch < 3; epoch++) for (const b of loader) assert.is((b.y as fl.Tensor).dtype, 'f32');
});

test('integer labels stay i64 (class labels, as PyTorch collates Python ints)', () => {
  const labels: fl.data.Dataset<[fl.Tensor, number]> = { length: 6, get: (i) => [fl.tensor([i]), i % 3] };
  for (const [, y] of new fl.data.DataLoader(labels, { batchSize: 2 })) assert.is((y as fl.Tensor).dtype, 'i64');
});

test('a declared dtype wins from the first batch: dataset.dtypes or the loader option', () => {
  const wholeFirst: fl.data.Dataset<{ x: fl.Tensor; y: number }> & { dtypes: fl.data.SampleDTypes } = {
    length: 8,
    get: (i) => ({ x: fl.tensor([i]), y: i < 4 ? i : i + 0.25 }),
    dtypes: { y: 'f32' },
  };
  const seen = [...new fl.data.DataLoader(wholeFirst, { batchSize: 4 })].map((b) => (b.y as fl.Tensor).dtype);
  assert.equal(seen, ['f32', 'f32']);
  const plain = { length: wholeFirst.length, get: wholeFirst.get };
  const viaOption = [...new fl.data.DataLoader(plain, { batchSize: 4, dtypes: { y: 'f64' } })].map((b) => (b.y as fl.Tensor).dtype);
  assert.equal(viaOption, ['f64', 'f64']);
  // A declared dtype casts tensor fields too.
  const cast = [...new fl.data.DataLoader(plain, { batchSize: 4, dtypes: { x: 'f64', y: 'f32' } })];
  assert.equal(
    cast.map((b) => [(b.x as fl.Tensor).dtype, (b.y as fl.Tensor).dtype]),
    [
      ['f64', 'f32'],
      ['f64', 'f32'],
    ],
  );
});

test('undeclared: a fraction after the first batch fixed a field as i64 is ERR_DTYPE naming the sample and the fix, never a silent change', () => {
  const wholeFirst: fl.data.Dataset<{ y: number }> = { length: 8, get: (i) => ({ y: i < 4 ? i : i + 0.25 }) };
  const it = new fl.data.DataLoader(wholeFirst, { batchSize: 4 })[Symbol.iterator]();
  assert.is((it.next().value.y as fl.Tensor).dtype, 'i64');
  const e = caught(() => it.next());
  assert.is(e.code, 'ERR_DTYPE', e.message);
  assert.match(e.message, /dataset\.get\(4\)\.y is 4\.25/);
  assert.match(e.message, /dtypes/);
});

test('defaultCollate on its own: the batch decides (any fraction gives f32), or the dtypes argument', () => {
  assert.is((fl.data.defaultCollate([1, 2.5]) as fl.Tensor).dtype, 'f32');
  assert.is((fl.data.defaultCollate([1, 2]) as fl.Tensor).dtype, 'i64');
  assert.is((fl.data.defaultCollate([1, 2], 'f32') as fl.Tensor).dtype, 'f32');
  const b = fl.data.defaultCollate(
    [
      { a: 1, b: [2, 3] },
      { a: 2, b: [4, 5] },
    ],
    { b: [undefined, 'f64'] },
  ) as {
    a: fl.Tensor;
    b: fl.Tensor[];
  };
  assert.equal([b.a.dtype, b.b[0].dtype, b.b[1].dtype], ['i64', 'i64', 'f64']);
  assert.is(caught(() => fl.data.defaultCollate([1, 2], 'int7' as never)).code, 'ERR_DTYPE');
  assert.is(caught(() => fl.data.defaultCollate([1, 2], { y: 'f32' } as never)).code, 'ERR_ARG');
});

test.run();
