/**
 * In-process collectives between virtual CPU devices (initLocalGroups with 'cpu:N'): every
 * collective on 2 and 4 devices against a computed reference, ordering with each device's compute,
 * timeouts naming the device that never posted, mismatches, and argument errors.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import type { ProcessGroup, ReduceOp } from '../../lib/distributed/index';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';

fl.setCpuDeviceCount(4);

type DT = 'f32' | 'f64' | 'i64';
const DEVICE_SETS = [
  ['cpu:0', 'cpu:1'],
  ['cpu', 'cpu:1', 'cpu:2', 'cpu:3'],
];
const SIZES = [1, 7, 1001, 30_011];

// Deterministic values per (rank, element); small integers so products stay exact in i64 and f64.
function inputOf(rank: number, n: number, salt: number): number[] {
  return Array.from({ length: n }, (_, i) => ((i * 7 + rank * 13 + salt * 3) % 9) - 4 + (rank === 1 && i % 5 === 0 ? 0.5 : 0));
}

function make(v: number[], dtype: DT, device: string): fl.Tensor {
  const data = dtype === 'i64' ? BigInt64Array.from(v, (x) => BigInt(Math.trunc(x))) : v;
  return fl.tensor(data as number[], { dtype, device });
}

function reduceRef(inputs: number[][], op: ReduceOp, dtype: DT): number[] {
  const ins = dtype === 'i64' ? inputs.map((v) => v.map(Math.trunc)) : inputs;
  return ins[0].map((_, i) => {
    const col = ins.map((v) => v[i]);
    switch (op) {
      case 'sum':
        return col.reduce((a, b) => a + b, 0);
      case 'avg':
        return col.reduce((a, b) => a + b, 0) / col.length;
      case 'prod':
        return col.reduce((a, b) => a * b, 1);
      case 'max':
        return Math.max(...col);
      default:
        return Math.min(...col);
    }
  });
}

async function all(works: { wait(): Promise<void> }[]): Promise<void> {
  await Promise.all(works.map((w) => w.wait()));
}

function expectSame(got: number[], want: number[], dtype: DT, what: string): void {
  if (dtype === 'i64') assert.equal(got, want, what);
  else close(got, want, dtype === 'f32' ? 1e-6 : 1e-12, 1e-6, what);
}

for (const devices of DEVICE_SETS) {
  const k = devices.length;
  test(`every collective on ${k} CPU devices: f32, f64, i64, odd sizes, against a reference`, async () => {
    const groups = await fl.distributed.initLocalGroups(devices);
    assert.equal(
      groups.map((g) => [g.rank, g.size, g.backend, g.device]),
      devices.map((d, i) => [i, k, 'local', fl.sameDevice(d, 'cpu') ? 'cpu' : d]),
    );
    for (const dtype of ['f32', 'f64', 'i64'] as DT[]) {
      for (const n of SIZES) {
        const ops: ReduceOp[] = dtype === 'i64' ? ['sum', 'max', 'min', 'prod'] : ['sum', 'avg', 'max', 'min', 'prod'];
        for (const [s, op] of ops.entries()) {
          const inputs = devices.map((_, r) => inputOf(r, n, s));
          const ts = inputs.map((v, r) => make(v, dtype, devices[r]));
          await all(groups.map((g, r) => g.allReduce(ts[r], { op })));
          const want = reduceRef(inputs, op, dtype);
          const first = values(ts[0]);
          expectSame(first, want, dtype, `allReduce ${op} ${dtype} n=${n}`);
          // Every device reduced the same slices in the same order: identical bits everywhere.
          for (let r = 1; r < k; r++) assert.equal(values(ts[r]), first, `allReduce ${op} ${dtype} n=${n} on ${devices[r]}`);

          const red = inputs.map((v, r) => make(v, dtype, devices[r]));
          const root = (s + 1) % k;
          await all(groups.map((g, r) => g.reduce(red[r], root, { op })));
          for (let r = 0; r < k; r++)
            expectSame(values(red[r]), r === root ? want : reduceRef([inputs[r]], 'sum', dtype), dtype, `reduce ${op} rank ${r}`);
        }
        // broadcast from the last rank
        const inputs = devices.map((_, r) => inputOf(r, n, 11));
        const bs = inputs.map((v, r) => make(v, dtype, devices[r]));
        await all(groups.map((g, r) => g.broadcast(bs[r], k - 1)));
        for (let r = 0; r < k; r++) expectSame(values(bs[r]), reduceRef([inputs[k - 1]], 'sum', dtype), dtype, `broadcast to ${r}`);
        // allGather: block r from rank r
        const ins = inputs.map((v, r) => make(v, dtype, devices[r]));
        const outs = devices.map((d) => fl.zeros([k * n], { dtype, device: d }));
        await all(groups.map((g, r) => g.allGather(outs[r], ins[r])));
        const gathered = inputs.flatMap((v) => reduceRef([v], 'sum', dtype));
        for (let r = 0; r < k; r++) expectSame(values(outs[r]), gathered, dtype, `allGather on ${r}`);
        // reduceScatter: rank r gets the reduction of block r
        const big = devices.map((_, r) => inputOf(r, k * n, 5));
        const rsIn = big.map((v, r) => make(v, dtype, devices[r]));
        const rsOut = devices.map((d) => fl.zeros([n], { dtype, device: d }));
        await all(groups.map((g, r) => g.reduceScatter(rsOut[r], rsIn[r], { op: 'sum' })));
        const summed = reduceRef(big, 'sum', dtype);
        for (let r = 0; r < k; r++) expectSame(values(rsOut[r]), summed.slice(r * n, (r + 1) * n), dtype, `reduceScatter on ${r}`);
      }
    }
    await all(groups.map((g) => g.barrier()));
    for (const g of groups) g.destroy();
  });
}

test('many collectives queued back to back match up in call order', async () => {
  const groups = await fl.distributed.initLocalGroups(['cpu:1', 'cpu:3']);
  const ts = groups.map((_, r) =>
    Array.from({ length: 20 }, (_, i) => fl.full([513], i + r * 100, { dtype: 'f64', device: r ? 'cpu:3' : 'cpu:1' })),
  );
  const works = groups.flatMap((g, r) => ts[r].map((t) => g.allReduce(t)));
  await all(works);
  for (let i = 0; i < 20; i++) for (const r of [0, 1]) assert.is(values(ts[r][i])[512], 2 * i + 100);
  for (const g of groups) g.destroy();
});

test('data-parallel steps on 4 devices: replicas stay bit-identical and match one device', async () => {
  const devices = fl.cpuDevices();
  const groups = await fl.distributed.initLocalGroups(devices);
  const w0 = fl.randn([16, 8], { dtype: 'f64' });
  const data = Array.from({ length: 10 }, () => fl.randn([32, 16], { dtype: 'f64' }));
  // Reference: the full batch on one device (mean of the per-shard gradients = the gradient of the mean).
  let ref = w0.clone();
  for (const x of data) {
    const g = x
      .transpose(0, 1)
      .matmul(x.matmul(ref))
      .mul(1 / 32);
    ref = ref.sub(g.mul(0.1));
  }
  let ws = devices.map((d) => w0.to(d));
  const works: { wait(): Promise<void> }[] = [];
  for (const x of data) {
    const grads = devices.map((d, r) => {
      const xs = x.narrow(0, r * 8, 8).to(d);
      return xs
        .transpose(0, 1)
        .matmul(xs.matmul(ws[r]))
        .mul(1 / 8);
    });
    works.push(...groups.map((g, r) => g.allReduce(grads[r], { op: 'avg' })));
    // Queued after the collective on each device, without waiting for it on the host.
    ws = ws.map((w, r) => w.sub(grads[r].mul(0.1)));
    await fl.ready();
  }
  await all(works);
  const first = values(ws[0]);
  for (let r = 1; r < devices.length; r++) assert.equal(values(ws[r]), first, `replica ${r}`);
  close(first, values(ref), 1e-10, 1e-12, 'replica vs one device');
  for (const g of groups) g.destroy();
});

test('a collective is ordered with each device compute and never blocks the JS thread', async () => {
  const groups = await fl.distributed.initLocalGroups(['cpu', 'cpu:2']);
  const a = fl.full([10_000], 1);
  const b = fl.full([10_000], 2, { device: 'cpu:2' });
  const wa = groups[0].allReduce(a); // cpu:2 has not posted yet: cpu waits on its stream, not here
  const after = a.mul(10); // queued on cpu after the collective: must see the reduced values
  let ticks = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (++ticks === 3) {
        clearInterval(timer);
        resolve();
      }
    }, 10);
  });
  assert.not.ok(wa.isCompleted());
  // cpu:1 is not in the group and keeps running meanwhile.
  assert.is(values(fl.ones([4], { device: 'cpu:1' }).sum())[0], 4);
  const wb = groups[1].allReduce(b);
  await all([wa, wb]);
  assert.ok(values(after).every((v) => v === 30));
  assert.ok(values(b).every((v) => v === 3));
  assert.ok(wa.completedAt !== null && wa.completedAt > 0);
  for (const g of groups) g.destroy();
});

async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { code?: string };
  }
  assert.unreachable('expected a rejection');
  throw new Error('unreachable');
}

test('a device that never posts fails the others with ERR_TIMEOUT naming it', async () => {
  const groups = await fl.distributed.initLocalGroups(['cpu', 'cpu:1', 'cpu:2'], { timeoutMs: 300 });
  const t0 = Date.now();
  const ts = ['cpu', 'cpu:1', 'cpu:2'].map((d) => fl.ones([5], { device: d }));
  const w0 = groups[0].allReduce(ts[0]);
  const w2 = groups[2].allReduce(ts[2]);
  const [e0, e2] = await Promise.all([rejection(w0.wait()), rejection(w2.wait())]);
  for (const e of [e0, e2]) {
    assert.is(e.code, 'ERR_TIMEOUT');
    assert.match(e.message, /cpu:1 did not post collective #0 within 300 ms/);
    assert.not.match(e.message, /cpu:2 did not/);
  }
  assert.ok(Date.now() - t0 < 20_000, 'the timeout fired');
  // The group is unusable from now on; the devices are not.
  const late = await rejection(groups[1].allReduce(ts[1]).wait());
  assert.is(late.code, 'ERR_TIMEOUT');
  assert.is(values(ts[0].add(1))[0], 2);
  // Alone, with nobody else posting: the waiter still times out.
  const pair = await fl.distributed.initLocalGroups(['cpu:2', 'cpu:3'], { timeoutMs: 200 });
  const alone = await rejection(pair[0].allReduce(fl.ones([3], { device: 'cpu:2' })).wait());
  assert.is(alone.code, 'ERR_TIMEOUT');
  assert.match(alone.message, /cpu:3 did not post/);
  for (const g of [...groups, ...pair]) g.destroy();
});

test('mismatched collectives fail every device with ERR_COLLECTIVE_MISMATCH', async () => {
  const groups = await fl.distributed.initLocalGroups(['cpu', 'cpu:1']);
  const a = fl.ones([4]);
  const b = fl.ones([4], { device: 'cpu:1' });
  const errs = await Promise.all([rejection(groups[0].allReduce(a).wait()), rejection(groups[1].broadcast(b, 0).wait())]);
  for (const e of errs) {
    assert.is(e.code, 'ERR_COLLECTIVE_MISMATCH');
    assert.match(e.message, /cpu called allReduce\(f32, 4 elements, op sum\).*cpu:1 called broadcast/);
  }
  const c = fl.ones([5], { device: 'cpu:1' });
  const errs2 = await Promise.all([rejection(groups[0].allReduce(a).wait()), rejection(groups[1].allReduce(c).wait())]);
  for (const e of errs2) assert.is(e.code, 'ERR_COLLECTIVE_MISMATCH');
  // Nothing moved, and the groups still work.
  await all([groups[0].allReduce(a), groups[1].allReduce(b)]);
  assert.equal(values(a), [2, 2, 2, 2]);
  for (const g of groups) g.destroy();
});

test('destroying one group fails the pending work of the others', async () => {
  const groups = await fl.distributed.initLocalGroups(['cpu', 'cpu:1'], { timeoutMs: 30_000 });
  const w = groups[0].allReduce(fl.ones([3]));
  await new Promise((r) => setTimeout(r, 20));
  groups[1].destroy();
  const e = await rejection(w.wait());
  assert.is(e.code, 'ERR_PEER_LOST');
  assert.match(e.message, /destroyed/);
  groups[0].destroy();
});

test('bad device lists and bad arguments are refused', async () => {
  const refused = async (p: Promise<unknown>, code: string, re: RegExp) => {
    const e = await rejection(p);
    assert.is(e.code, code, e.message);
    assert.match(e.message, re);
  };
  await refused(fl.distributed.initLocalGroups(['cpu:0', 'cuda:0']), 'ERR_DEVICE', /all CPU or all CUDA/);
  await refused(fl.distributed.initLocalGroups(['cpu:1', 'cpu:1']), 'ERR_ARG', /distinct.*cpu:1 twice/);
  await refused(fl.distributed.initLocalGroups(['cpu', 'cpu:0']), 'ERR_ARG', /distinct/);
  await refused(fl.distributed.initLocalGroups(['cpu', 'cpu:9']), 'ERR_DEVICE', /out of range/);
  await refused(fl.distributed.initLocalGroups([]), 'ERR_ARG', /non-empty/);
  await refused(fl.distributed.initLocalGroups(['cpu', 'cpu:1'], { timeoutMs: 0 }), 'ERR_ARG', /timeoutMs/);
  const groups: ProcessGroup[] = await fl.distributed.initLocalGroups(['cpu', 'cpu:1']);
  expectError(() => groups[1].allReduce(fl.ones([2])), TypeError, 'ERR_DEVICE', /takes tensors on cpu:1, got one on cpu/);
  expectError(() => groups[0].allReduce(fl.ones([2], { dtype: 'i64' }), { op: 'avg' }), TypeError, 'ERR_DTYPE', /avg/);
  expectError(() => groups[0].allGather(fl.zeros([3]), fl.ones([2])), RangeError, 'ERR_SHAPE', /2 x 2 = 4/);
  expectError(() => groups[0].reduceScatter(fl.zeros([3]), fl.ones([4])), RangeError, 'ERR_SHAPE', /2 x 3 = 6/);
  expectError(() => groups[0].send(fl.ones([2]), 1), TypeError, 'ERR_ARG', /point-to-point/);
  expectError(() => groups[0].reduce(fl.ones([2]), 5), RangeError, 'ERR_INDEX');
  for (const g of groups) g.destroy();
  expectError(() => groups[0].barrier(), TypeError, 'ERR_DISPOSED');
});

test.run();
