import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';

// Every rejection that escapes is recorded here (and so does not crash the file): tests assert none.
const unhandled: unknown[] = [];
process.on('unhandledRejection', (e) => unhandled.push(e));
/** Lets timers, immediates and the unhandled-rejection check run, then returns what escaped. */
async function escaped(): Promise<unknown[]> {
  await new Promise((r) => setTimeout(r, 20));
  return unhandled.splice(0);
}
const tick = () => new Promise((r) => setTimeout(r, 2));
const values = (b: unknown) => (b as { v: fl.Tensor }).v.toArray() as number[];

const x = fl.arange(10).to('f32').reshape([10, 1]);
const y = fl.arange(10);

test('TensorDataset rows and batches', () => {
  const ds = new fl.data.TensorDataset(x, y);
  assert.is(ds.length, 10);
  assert.equal(
    ds.get(3).map((t) => t.toArray()),
    [[3], 3],
  );
  assert.throws(
    () => ds.get(10),
    (e: { code?: string }) => e.code === 'ERR_INDEX',
  );
  assert.throws(
    () => new fl.data.TensorDataset(x, fl.arange(9)),
    (e: { code?: string }) => e.code === 'ERR_SHAPE',
  );
});

test('DataLoader batches in order, with dropLast', () => {
  const ds = new fl.data.TensorDataset(x, y);
  const batches = [...new fl.data.DataLoader(ds, { batchSize: 4 })] as fl.Tensor[][];
  assert.equal(
    batches.map((b) => b[1].toArray()),
    [
      [0, 1, 2, 3],
      [4, 5, 6, 7],
      [8, 9],
    ],
  );
  const dl = new fl.data.DataLoader(ds, { batchSize: 4, dropLast: true });
  assert.is(dl.length, 2);
  assert.is([...dl].length, 2);
});

test('seeded shuffle: a permutation, reproducible, new each epoch', () => {
  const ds = new fl.data.TensorDataset(x, y);
  const order = (dl: fl.data.DataLoader<fl.Tensor[]>) => ([...dl] as fl.Tensor[][]).flatMap((b) => b[1].toArray() as number[]);
  const a = new fl.data.DataLoader(ds, { batchSize: 3, shuffle: true, seed: 7 });
  const b = new fl.data.DataLoader(ds, { batchSize: 3, shuffle: true, seed: 7 });
  const e1 = order(a),
    e2 = order(a);
  assert.equal(e1, order(b));
  assert.equal(
    [...e1].sort((p, q) => p - q),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  );
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
  assert.equal(
    ([...dl] as fl.Tensor[][]).flatMap((b) => b[1].toArray() as number[]),
    [1, 4, 7, 0],
  );
  assert.throws(
    () => new fl.data.DataLoader(ds, { sampler, shuffle: true }),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
});

test('an async dataset error arrives with its batch, is catchable, and nothing escapes', async () => {
  const ds: fl.data.Dataset<{ v: number }> = {
    length: 6,
    get: async (i) => {
      if (i === 3) throw new Error('bad sample 3');
      return { v: i };
    },
  };
  const seen: number[][] = [];
  let caught: unknown;
  try {
    for await (const b of new fl.data.DataLoader(ds, { batchSize: 2 })) {
      seen.push(values(b));
      await tick(); // a step that awaits: the prefetched batch rejects meanwhile
    }
  } catch (e) {
    caught = e;
  }
  assert.equal(seen, [[0, 1]]);
  assert.match(String(caught), /bad sample 3/);
  assert.equal(await escaped(), []);
});

test('break with a failing prefetched batch leaves no unhandled rejection', async () => {
  const ds: fl.data.Dataset<{ v: number }> = {
    length: 8,
    get: async (i) => {
      if (i >= 4) throw new Error(`bad sample ${i}`);
      return { v: i };
    },
  };
  const seen: number[][] = [];
  for await (const b of new fl.data.DataLoader(ds, { batchSize: 2 })) {
    seen.push(values(b));
    await tick();
    if (seen.length === 2) break;
  }
  assert.equal(seen, [
    [0, 1],
    [2, 3],
  ]);
  assert.equal(await escaped(), []);
});

// Collects garbage and lets finalizers run, so tensors earlier tests dropped without disposing
// are not freed in the middle of a count of live tensors.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
}

test('break (and return()) dispose the prefetched batch', async () => {
  const ds = new fl.data.TensorDataset(x, y);
  const live = () => fl.memory().cpu.tensors;
  await settle();
  const before = live();
  for await (const b of new fl.data.DataLoader(ds, { batchSize: 2 }) as AsyncIterable<fl.Tensor[]>) {
    b.forEach((t) => t.dispose());
    break;
  }
  await escaped();
  assert.is(live(), before);
  const it = new fl.data.DataLoader(ds, { batchSize: 2 })[Symbol.asyncIterator]();
  const first = await it.next();
  (first.value as fl.Tensor[]).forEach((t) => t.dispose());
  await it.return?.(undefined);
  await escaped();
  assert.is(live(), before);
});

test('a synchronous throw in get() arrives with its own batch: no good batch is lost', async () => {
  const ds: fl.data.Dataset<{ v: number }> = {
    length: 8,
    get: (i) => {
      if (i === 4) throw new Error('bad sample 4');
      return { v: i };
    },
  };
  const seen: number[][] = [];
  let caught: unknown;
  try {
    for await (const b of new fl.data.DataLoader(ds, { batchSize: 2 })) seen.push(values(b));
  } catch (e) {
    caught = e;
  }
  assert.equal(seen, [
    [0, 1],
    [2, 3],
  ]);
  assert.match(String(caught), /bad sample 4/);
  // The synchronous iterator, which does not prefetch, agrees.
  const sync: number[][] = [];
  assert.throws(() => {
    for (const b of new fl.data.DataLoader(ds, { batchSize: 2 })) sync.push(values(b));
  }, /bad sample 4/);
  assert.equal(sync, [
    [0, 1],
    [2, 3],
  ]);
  assert.equal(await escaped(), []);
});

test('the sync iterator refuses an async dataset without leaking its rejection', async () => {
  const ds: fl.data.Dataset<number> = {
    length: 2,
    get: async () => {
      throw new Error('never seen');
    },
  };
  throwsCode(() => [...new fl.data.DataLoader(ds)], 'ERR_ARG');
  assert.equal(await escaped(), []);
});

test('async iteration hands out batches on macrotask turns', async () => {
  const ds = new fl.data.TensorDataset(x, y);
  let immediates = 0;
  const bump = () => {
    immediates++;
    if (immediates < 100) setImmediate(bump);
  };
  setImmediate(bump);
  let batches = 0;
  for await (const b of new fl.data.DataLoader(ds, { batchSize: 1 }) as AsyncIterable<fl.Tensor[]>) {
    b.forEach((t) => t.dispose());
    batches++;
  }
  assert.is(batches, 10);
  // Only microtasks in between would leave the immediate unrun until the loop ended.
  assert.ok(immediates >= 5, `setImmediate ran ${immediates} times during 10 batches`);
});

test('options are checked at construction', () => {
  const ds = new fl.data.TensorDataset(x, y);
  const make = (o: object) => () => new fl.data.DataLoader(ds, o as fl.data.DataLoaderOptions<fl.Tensor[], fl.Tensor[]>);
  throwsCode(make({ batchsize: 4 }), 'ERR_ARG');
  assert.throws(make({ batchsize: 4 }), /did you mean 'batchSize'/);
  assert.throws(make({ batch_size: 4 }), /did you mean 'batchSize'/);
  for (const key of ['numWorkers', 'pinMemory', 'num_workers'])
    assert.throws(
      make({ [key]: key === 'pinMemory' ? true : 4 }),
      (e: Error & { code?: string }) => e.code === 'ERR_ARG' && e instanceof TypeError && e.message.includes(`'${key}' is not supported`),
    );
  throwsCode(make({ batchSize: '4' }), 'ERR_ARG');
  throwsCode(make({ batchSize: 0 }), 'ERR_RANGE');
  throwsCode(make({ batchSize: 2.5 }), 'ERR_RANGE');
  throwsCode(make({ shuffle: 'yes' }), 'ERR_ARG');
  throwsCode(make({ dropLast: 1 }), 'ERR_ARG');
  throwsCode(make({ seed: 'a' }), 'ERR_ARG');
  throwsCode(make({ collate: 3 }), 'ERR_ARG');
  throwsCode(make({ sampler: { length: 2 } }), 'ERR_ARG');
  throwsCode(() => new fl.data.DataLoader(null as unknown as fl.data.Dataset), 'ERR_ARG');
  throwsCode(() => new fl.data.DataLoader(ds, 5 as unknown as object), 'ERR_ARG');
});

function firstColumn(b: fl.Tensor[]): number[] {
  return Array.from(b[0].dataSync() as Float32Array).filter((_, i) => i % 2 === 0);
}

test('stateDict/loadStateDict: a fresh loader resumes mid-epoch with the same remaining batches', async () => {
  const data = new fl.data.TensorDataset(fl.arange(0, 40).reshape([20, 2]).to('f32'));
  const make = () => new fl.data.DataLoader(data, { batchSize: 3, shuffle: true, seed: 7 });
  const whole: number[][] = [];
  const a = make();
  for await (const b of a) whole.push(firstColumn(b)); // epoch 0
  for await (const b of a) whole.push(firstColumn(b)); // epoch 1
  const b = make();
  const seen: number[][] = [];
  for await (const batch of b) seen.push(firstColumn(batch));
  let state = b.stateDict();
  assert.equal(state, { epoch: 1, batches: 0 });
  let n = 0;
  for await (const batch of b) {
    seen.push(firstColumn(batch));
    if (++n === 4) break;
  }
  state = b.stateDict();
  assert.equal(state, { epoch: 1, batches: 4 });
  const c = make();
  c.loadStateDict(JSON.parse(JSON.stringify(state)));
  for await (const batch of c) seen.push(firstColumn(batch));
  assert.equal(seen, whole);
  assert.equal(c.stateDict(), { epoch: 2, batches: 0 });
  throwsCode(() => c.loadStateDict({ epoch: -1, batches: 0 }), 'ERR_ARG');
  throwsCode(() => c.loadStateDict({ epoch: 0, batches: 99 }), 'ERR_RANGE');
  throwsCode(() => c.loadStateDict({ epoch: 0, batchez: 1 } as unknown as fl.data.DataLoaderState), 'ERR_ARG');
});

test('stateDict/loadStateDict with a DistributedSampler: the sampler is restored to its epoch start and the loader skips', async () => {
  const data = new fl.data.TensorDataset(fl.arange(0, 40).reshape([20, 2]).to('f32'));
  const make = () => {
    const sampler = new fl.DistributedSampler(data, { numReplicas: 2, rank: 1, shuffle: true, seed: 3 });
    sampler.setEpoch(5);
    return new fl.data.DataLoader(data, { batchSize: 2, sampler });
  };
  const whole: number[][] = [];
  for await (const b of make()) whole.push(firstColumn(b));
  const a = make();
  const seen: number[][] = [];
  for await (const b of a) {
    seen.push(firstColumn(b));
    if (seen.length === 2) break;
  }
  const c = make();
  c.loadStateDict(JSON.parse(JSON.stringify(a.stateDict())));
  for await (const b of c) seen.push(firstColumn(b));
  assert.equal(seen, whole);
});

test('defaultCollate: all-integer plain numbers become i64 labels, any fraction f32', () => {
  const labels = fl.data.defaultCollate([3, 0, 7]) as fl.Tensor;
  assert.is(labels.dtype, 'i64');
  assert.equal(Array.from(labels.dataSync() as BigInt64Array, Number), [3, 0, 7]);
  const values = fl.data.defaultCollate([1, 0.5]) as fl.Tensor;
  assert.is(values.dtype, 'f32');
  assert.equal(Array.from(values.dataSync() as Float32Array), [1, 0.5]);
});

/** The error `fn` throws, or rejects with when it returns a promise. */
async function failure(fn: () => unknown): Promise<Error & { code?: string }> {
  try {
    await fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected an error');
}

test('a dataset whose get() returns undefined: ERR_DATA naming the dataset index, sync and async (was a TypeError)', async () => {
  const samples: Array<(i: number) => unknown> = [
    (i: number) => (i === 2 ? undefined : fl.ones([2])),
    (i: number) => (i === 2 ? undefined : [fl.ones([2]), i]),
    (i: number) => (i === 2 ? undefined : { x: fl.ones([2]), label: i }),
  ];
  for (const get of samples) {
    const sync = new fl.data.DataLoader({ length: 4, get }, { batchSize: 4 });
    const e = await failure(() => [...sync]);
    assert.is(e.code, 'ERR_DATA', e.message);
    assert.match(e.message, /^DataLoader: dataset\.get\(2\) returned undefined/);
    const async_ = new fl.data.DataLoader({ length: 4, get: async (i: number) => get(i) }, { batchSize: 4 });
    const a = await failure(async () => {
      for await (const _ of async_);
    });
    assert.is(a.code, 'ERR_DATA', a.message);
    assert.match(a.message, /^DataLoader: dataset\.get\(2\) returned undefined/);
  }
  // The index named is the dataset's, not the position in a shuffled batch.
  const shuffled = new fl.data.DataLoader({ length: 6, get: (i: number) => (i === 5 ? undefined : i) }, { batchSize: 6, shuffle: true });
  assert.match((await failure(() => [...shuffled])).message, /dataset\.get\(5\) returned undefined/);
  assert.equal(await escaped(), []);
});

test('the default collate names the sample whose structure differs; a custom collate receives null as it is', async () => {
  const ds = (get: (i: number) => unknown) => new fl.data.DataLoader({ length: 3, get }, { batchSize: 3 });
  const cases: Array<[(i: number) => unknown, string, RegExp]> = [
    [(i) => (i === 1 ? null : fl.ones([2])), 'ERR_DATA', /^DataLoader: dataset\.get\(1\) returned null, which cannot be batched/],
    [
      (i) => (i === 2 ? 3 : fl.ones([2])),
      'ERR_DATA',
      /^DataLoader: dataset\.get\(2\) is number 3, but dataset\.get\(0\) is a f32 tensor of shape \[2\]/,
    ],
    [(i) => ({ x: i, label: i === 1 ? undefined : i }), 'ERR_DATA', /^DataLoader: dataset\.get\(1\)\.label is undefined/],
    [
      (i) => [i, i === 2 ? 'a' : i],
      'ERR_DATA',
      /^DataLoader: dataset\.get\(2\)\[1\] is the string "a", but dataset\.get\(0\)\[1\] is number 0/,
    ],
    [(i) => fl.ones([i + 1]), 'ERR_SHAPE', /^DataLoader: dataset\.get\(1\) has shape \[2\], but dataset\.get\(0\) has shape \[1\]/],
  ];
  for (const [get, code, message] of cases) {
    const e = await failure(() => [...ds(get)]);
    assert.is(e.code, code, e.message);
    assert.match(e.message, message);
  }
  const kept = new fl.data.DataLoader({ length: 2, get: (i: number) => (i === 0 ? null : i) }, { batchSize: 2, collate: (xs) => xs });
  assert.equal([...kept], [[null, 1]]);
});

test('defaultCollate of junk: ERR_ARG for a non-array, ERR_DATA naming samples[i]', () => {
  for (const junk of [undefined, null, [], 'ab', 3]) throwsCode(() => fl.data.defaultCollate(junk as never), 'ERR_ARG');
  throwsCode(() => fl.data.defaultCollate([1, undefined]), 'ERR_DATA');
  try {
    fl.data.defaultCollate([{ a: [1, 2] }, { a: [1] }]);
    assert.unreachable('expected an error');
  } catch (e) {
    assert.match((e as Error).message, /^defaultCollate: samples\[1\]\.a\[1\] is undefined, which cannot be batched/);
  }
});

test.run();
