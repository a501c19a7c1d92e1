import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fl from '../../lib';
import { rejection } from '../helpers/errors';

const dir = mkdtempSync(join(tmpdir(), 'flockml-csv-'));
let files = 0;
function csv(text: string): string {
  const p = join(dir, `f${files++}.csv`);
  writeFileSync(p, text);
  return p;
}

const IRIS = csv(
  [
    'sepal_length,sepal_width,petal_length,species',
    '5.1,3.5,1.4,setosa',
    '4.9,3.0,1.4,setosa',
    '',
    '7.0,3.2,4.7,versicolor',
    '6.3,3.3,6.0,virginica',
    '5.8,2.7,5.1,virginica',
  ].join('\r\n'),
);
const categories = { species: ['setosa', 'versicolor', 'virginica'] };

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

test('CsvDataset streams [features, label] rows: header names, column selection, categories, CRLF and blank lines', async () => {
  const ds = new fl.data.CsvDataset(IRIS, { label: 'species', columns: ['petal_length', 'sepal_length'], categories });
  const rows = (await collect(ds)) as [fl.Tensor, number][];
  assert.is(rows.length, 5);
  assert.equal(rows[0][0].toArray(), [1.4, 5.1].map(Math.fround));
  assert.is(rows[0][0].dtype, 'f32');
  assert.equal(
    rows.map((r) => r[1]),
    [0, 0, 1, 2, 2],
  );
  // A second pass reads the file again (an epoch).
  assert.is((await collect(ds)).length, 5);
});

test('without a label a sample is the feature tensor; header: false and index columns; dtypes; delimiter and quotes', async () => {
  const p = csv('1;"2";3\n4;5;6\n');
  const rows = (await collect(new fl.data.CsvDataset(p, { header: false, delimiter: ';', columns: [2, 0], dtypes: 'f64' }))) as fl.Tensor[];
  assert.equal(
    rows.map((r) => r.toArray()),
    [
      [3, 1],
      [6, 4],
    ],
  );
  assert.is(rows[0].dtype, 'f64');
  const named = (await collect(new fl.data.CsvDataset(p, { header: ['a', 'b', 'c'], delimiter: ';', label: 'b' }))) as [
    fl.Tensor,
    number,
  ][];
  assert.equal(named[1][0].toArray(), [4, 6]);
  assert.is(named[1][1], 5);
});

test('the DataLoader batches a CsvDataset as a stream; a declared label dtype holds in every batch', async () => {
  const p = csv(`x,y\n${Array.from({ length: 10 }, (_, i) => `${i},${i < 4 ? i + 0.5 : i}`).join('\n')}\n`);
  const loader = new fl.data.DataLoader(new fl.data.CsvDataset(p, { label: 'y', dtypes: { y: 'f32' } }), { batchSize: 4 });
  const batches: [fl.Tensor, fl.Tensor][] = [];
  for await (const b of loader) batches.push(b as unknown as [fl.Tensor, fl.Tensor]);
  assert.equal(
    batches.map((b) => b[0].shape),
    [
      [4, 1],
      [4, 1],
      [2, 1],
    ],
  );
  assert.equal(
    batches.map((b) => b[1].dtype),
    ['f32', 'f32', 'f32'],
  );
  assert.equal(batches[2][1].toArray(), [8, 9]);
  const dropped = new fl.data.DataLoader(new fl.data.CsvDataset(p, { label: 'y' }), { batchSize: 4, dropLast: true });
  assert.is((await collect(dropped)).length, 2);
  // A stream has no length: the loader's length is ERR_ARG, and a progress bar runs without a total.
  let lengthCode = '';
  try {
    void dropped.length;
  } catch (e) {
    lengthCode = (e as { code?: string }).code ?? '';
  }
  assert.is(lengthCode, 'ERR_ARG');
  const sink = { write: () => true };
  assert.is((await collect(fl.utils.progress(dropped, { stream: sink as never }))).length, 2);
  // Shuffling needs a map-style dataset: readCsv.
  let refused = false;
  try {
    new fl.data.DataLoader(new fl.data.CsvDataset(p), { shuffle: true });
  } catch (e) {
    refused = (e as { code?: string }).code === 'ERR_ARG';
  }
  assert.ok(refused);
});

test('a stream resumes from the loader state: the batches handed out are skipped', async () => {
  const p = csv(`a\n${Array.from({ length: 9 }, (_, i) => i).join('\n')}\n`);
  const loader = new fl.data.DataLoader(new fl.data.CsvDataset(p), { batchSize: 2 });
  const it = loader[Symbol.asyncIterator]();
  await it.next();
  await it.next();
  const state = loader.stateDict();
  assert.equal(state, { epoch: 0, batches: 2 });
  const again = new fl.data.DataLoader(new fl.data.CsvDataset(p), { batchSize: 2 });
  again.loadStateDict(state);
  const rest = (await collect(again)) as unknown as fl.Tensor[];
  assert.equal(
    rest.map((b) => b.toArray()),
    [[[4], [5]], [[6], [7]], [[8]]],
  );
});

test('readCsv loads a map-style TensorDataset: shuffled batches, the label dtype from the whole column', async () => {
  const ds = await fl.data.readCsv(IRIS, { label: 'species', categories });
  assert.equal(ds.tensors[0].shape, [5, 3]);
  assert.is(ds.tensors[1].dtype, 'i64');
  assert.equal(ds.tensors[1].toArray(), [0, 0, 1, 2, 2]);
  const reg = await fl.data.readCsv(csv('x,y\n1,2\n3,4.5\n'), { label: 'y' });
  assert.is(reg.tensors[1].dtype, 'f32');
  const batches = [...new fl.data.DataLoader(ds, { batchSize: 2, shuffle: true, seed: 1 })];
  assert.is(batches.length, 3);
});

test('a bad row is ERR_FORMAT naming the file, the line and the column', async () => {
  const p = csv('a,b,c\n1,2,3\n4,x5,6\n');
  let e = await rejection(collect(new fl.data.CsvDataset(p)));
  assert.is(e.code, 'ERR_FORMAT');
  assert.ok(e.message.includes(`${p}:3: column "b" (field 2) "x5" is not a number`), e.message);
  e = await rejection(collect(new fl.data.CsvDataset(csv('a,b\n1,2\n3\n'))));
  assert.is(e.code, 'ERR_FORMAT');
  assert.match(e.message, /:3: has 1 fields, but the header has 2/);
  e = await rejection(fl.data.readCsv(csv('a,b\n1,\n'), {}));
  assert.match(e.message, /:2: column "b" \(field 2\) is empty/);
  e = await rejection(collect(new fl.data.CsvDataset(csv('a,b\n1,"2\n'))));
  assert.is(e.code, 'ERR_FORMAT');
  assert.match(e.message, /CSV_QUOTE_NOT_CLOSED/);
  e = await rejection(collect(new fl.data.CsvDataset(IRIS, { label: 'species', categories: { species: ['setosa'] } })));
  assert.match(e.message, /:5: column "species" \(field 4\) "versicolor" is not one of its categories/);
  e = await rejection(collect(new fl.data.CsvDataset(csv('a,b\n1,2.5\n'), { label: 'b', dtypes: { b: 'i64' } })));
  assert.match(e.message, /"2.5" is not an integer/);
  e = await rejection(collect(new fl.data.CsvDataset(join(dir, 'missing.csv'))));
  assert.is(e.code, 'ERR_NOT_FOUND');
  e = await rejection(collect(new fl.data.CsvDataset(IRIS, { label: 'kind' })));
  assert.is(e.code, 'ERR_ARG');
  assert.match(e.message, /has no column "kind"; its columns are "sepal_length"/);
});

test('options are checked at construction', () => {
  const refused = (fn: () => unknown, code: string) => {
    try {
      fn();
    } catch (e) {
      assert.is((e as { code?: string }).code, code);
      return;
    }
    assert.unreachable('expected a throw');
  };
  refused(() => new fl.data.CsvDataset(IRIS, { labels: 'x' } as never), 'ERR_ARG');
  refused(() => new fl.data.CsvDataset(IRIS, { columns: [] }), 'ERR_ARG');
  refused(() => new fl.data.CsvDataset(IRIS, { columns: ['a'], label: 'a' }), 'ERR_ARG');
  refused(() => new fl.data.CsvDataset(IRIS, { dtypes: 'float7' as never }), 'ERR_DTYPE');
  refused(() => new fl.data.CsvDataset(IRIS, { header: 'yes' as never }), 'ERR_ARG');
  refused(() => new fl.data.CsvDataset(3 as never), 'ERR_ARG');
});

test.run();
