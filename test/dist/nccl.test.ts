/**
 * The nccl backend. Everywhere: a clear ERR_NCCL where it cannot run, and CPU tensors refused.
 * With a GPU and NCCL: every collective and dtype on a world of one (cuda:0) and across the local
 * devices (ncclCommInitAll) against a reference computed here.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import { ProcessGroup } from '../../lib/distributed/process_group';
import type { NativeGroup } from '../../types/native';
import type { DType } from '../../lib/dtype';
import { freePort, rejection } from './harness';
import { gpuSuiteRuns } from '../gpu/gpu_present';
import { close } from '../helpers/reference';
import { valuesAsync } from '../helpers/values';

const env = () => ({
  RANK: '0',
  WORLD_SIZE: '1',
  LOCAL_RANK: '0',
  MASTER_ADDR: '127.0.0.1',
  MASTER_PORT: String(freePort()),
  FLOCKML_TOKEN: 'nccl-test',
});
const info = native.ncclInfo();
const gpu = gpuSuiteRuns('nccl (GPU part)') && info.available;

function thrown(f: () => unknown): Error & { code?: string } {
  try {
    f();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

test('ncclInfo: available, or a reason', () => {
  assert.type(info.available, 'boolean');
  assert.type(info.version, 'string');
  if (!info.available) assert.ok(info.reason.length > 0);
});

if (!gpu) {
  test('initProcessGroup({ backend: nccl }) rejects with ERR_NCCL saying why', async () => {
    const e = await rejection(fl.distributed.initProcessGroup({ backend: 'nccl', env: env(), timeoutMs: 5000 }));
    assert.is(e.code, 'ERR_NCCL');
    assert.match(e.message, /nccl backend is unavailable: (this build has no CUDA|no CUDA device is visible|cannot load)/);
    assert.is(fl.distributed.isInitialized(), false);
  });

  test('initLocalGroups rejects with ERR_NCCL; bad device lists with ERR_ARG first', async () => {
    const e = await rejection(fl.distributed.initLocalGroups([0]));
    assert.is(e.code, 'ERR_NCCL');
    assert.match(e.message, /unavailable/);
    for (const bad of [[], [0, 0], [-1], [0.5]]) {
      const b = await rejection(fl.distributed.initLocalGroups(bad));
      assert.is(b.code, 'ERR_ARG', JSON.stringify(bad));
    }
  });

  test('the native constructors re-validate, then refuse with ERR_NCCL', () => {
    const id = new Uint8Array(128);
    assert.is(thrown(() => native.ncclUniqueId()).code, 'ERR_NCCL');
    assert.is(thrown(() => native.ncclInitRank(0, 1, 0, id, 1000)).code, 'ERR_NCCL');
    assert.is(thrown(() => native.ncclInitAll([0], 1000)).code, 'ERR_NCCL');
    const shortId = thrown(() => native.ncclInitRank(0, 1, 0, new Uint8Array(16), 1000));
    assert.is(shortId.code, 'ERR_ARG');
    assert.instance(shortId, TypeError);
    assert.is(thrown(() => native.ncclInitRank(0, 1, 0, [1, 2] as unknown as Uint8Array, 1000)).code, 'ERR_ARG');
    assert.is(thrown(() => native.ncclInitRank(2, 2, 0, id, 1000)).code, 'ERR_INDEX'); // rank outside the world
    assert.is(thrown(() => native.ncclInitAll([0, 99], 1000)).code, 'ERR_SHAPE');
    assert.is(thrown(() => native.ncclInitAll([], 1000)).code, 'ERR_ARG');
  });
}

test('an nccl group refuses CPU tensors before any work is queued', () => {
  // The TS wrapper's check runs before the native handle is touched, so a stand-in handle will do.
  const pg = new ProcessGroup({} as NativeGroup, 0, [0], 'nccl', 'cuda:0');
  const t = fl.tensor([1, 2, 3]);
  for (const f of [
    () => pg.allReduce(t),
    () => pg.broadcast(t),
    () => pg.allGather(fl.zeros([3]), t),
    () => pg.reduceScatter(fl.zeros([3]), t),
    () => pg.send(t, 0),
    () => pg.recv(t, 0),
  ]) {
    const e = thrown(f);
    assert.is(e.code, 'ERR_DEVICE');
    assert.instance(e, TypeError);
    assert.match(e.message, /cuda:0, got one on cpu/);
  }
});

// ---- with a GPU and NCCL ----

const DTYPES: DType[] = ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64'];
const SIZES = [0, 1, 7, (1 << 20) | 3];

function cudaTensor(values: number[], dtype: DType, device: string): fl.Tensor {
  return fl.tensor(Float64Array.from(values), { dtype: 'f64' }).to(dtype).to(device);
}
// Small integers: exact in every dtype, sums and products included; results are checked to 1e-9
// relative, zeros exactly.
const value = (r: number, i: number) => ((r * 5 + i * 3) % 7) - 3;

if (gpu) {
  test('world of one on cuda:0: every collective and dtype against a local reference', async () => {
    const pg = await fl.distributed.initProcessGroup({ backend: 'nccl', env: env(), timeoutMs: 30_000 });
    assert.is(pg.backend, 'nccl');
    assert.is(pg.device, 'cuda:0');
    for (const dtype of DTYPES) {
      for (const n of SIZES) {
        const ref = Array.from({ length: n }, (_, i) => value(0, i));
        const tag = `${dtype}[${n}]`;
        const ops =
          n > 7 ? (['sum'] as const) : (['sum', 'max', 'min', 'prod', ...(dtype.startsWith('i') ? [] : (['avg'] as const))] as const);
        for (const op of ops) {
          // Queued compute writes the input right before the call: the collective must see it.
          const t = cudaTensor(ref, dtype, 'cuda:0').mul(1);
          const w = pg.allReduce(t, { op });
          const after = t.add(0); // ordered after the collective on the device
          await w.wait();
          close(await valuesAsync(after), ref, 1e-9, 0, `allReduce(${op}) ${tag}`);
        }
        const b = cudaTensor(ref, dtype, 'cuda:0');
        await pg.broadcast(b, 0).wait();
        close(await valuesAsync(b), ref, 1e-9, 0, `broadcast ${tag}`);
        const out = fl.zeros([n], { dtype, device: 'cuda:0' });
        await pg.allGather(out, cudaTensor(ref, dtype, 'cuda:0')).wait();
        close(await valuesAsync(out), ref, 1e-9, 0, `allGather ${tag}`);
        const rs = fl.zeros([n], { dtype, device: 'cuda:0' });
        await pg.reduceScatter(rs, cudaTensor(ref, dtype, 'cuda:0')).wait();
        close(await valuesAsync(rs), ref, 1e-9, 0, `reduceScatter ${tag}`);
      }
    }
    await pg.barrier().wait();
    const x = fl.tensor([1, 2, 3], { device: 'cuda:0' });
    assert.is(thrown(() => pg.allReduce(fl.tensor([1]))).code, 'ERR_DEVICE');
    assert.is(thrown(() => pg.allReduce(fl.tensor([1], { dtype: 'u8' }).to('cuda:0'))).code, 'ERR_DTYPE');
    assert.is(thrown(() => pg.allReduce(fl.tensor([1], { dtype: 'i32' }).to('cuda:0'), { op: 'avg' })).code, 'ERR_DTYPE');
    assert.is(thrown(() => pg.send(x, 0)).code, 'ERR_ARG'); // to itself
    assert.is(thrown(() => pg.allGather(fl.zeros([4], { device: 'cuda:0' }), x)).code, 'ERR_SHAPE');
    await fl.distributed.destroyProcessGroup();
    assert.throws(() => pg.barrier(), /destroyed/);
  });

  test('the native group re-validates what the wrapper checks', async () => {
    const { group, ready } = native.ncclInitRank(0, 1, 0, native.ncclUniqueId(), 30_000);
    await ready;
    assert.is(thrown(() => native.pgAllReduce(group, fl.tensor([1, 2]).handle, 'sum')).code, 'ERR_DEVICE');
    assert.is(thrown(() => native.pgAllReduce(group, fl.tensor([1], { dtype: 'u8' }).to('cuda:0').handle, 'sum')).code, 'ERR_DTYPE');
    native.pgDestroy(group);
  });

  test(`initLocalGroups over ${fl.cuda.deviceCount()} device(s): collectives across them`, async () => {
    const devices = Array.from({ length: fl.cuda.deviceCount() }, (_, i) => i);
    const groups = await fl.distributed.initLocalGroups(devices, { timeoutMs: 30_000 });
    const k = devices.length;
    const n = 1000;
    const sum = Array.from({ length: n }, (_, i) => devices.reduce((a, r) => a + value(r, i), 0));
    for (const dtype of DTYPES) {
      const ts = devices.map((d, r) =>
        cudaTensor(
          Array.from({ length: n }, (_, i) => value(r, i)),
          dtype,
          `cuda:${d}`,
        ),
      );
      const works = groups.map((g, r) => g.allReduce(ts[r]));
      const doubled = ts.map((t) => t.mul(2)); // queued after the batch: sees the sums
      await Promise.all(works.map((w) => w.wait()));
      for (let r = 0; r < k; r++)
        close(
          await valuesAsync(doubled[r]),
          sum.map((v) => 2 * v),
          1e-9,
          0,
          `local allReduce ${dtype} cuda:${devices[r]}`,
        );
    }
    const outs = devices.map((d) => fl.zeros([k * n], { device: `cuda:${d}` }));
    await Promise.all(
      groups.map((g, r) =>
        g
          .allGather(
            outs[r],
            cudaTensor(
              Array.from({ length: n }, (_, i) => value(r, i)),
              'f32',
              `cuda:${devices[r]}`,
            ),
          )
          .wait(),
      ),
    );
    const gathered = devices.flatMap((_, r) => Array.from({ length: n }, (_, i) => value(r, i)));
    for (let r = 0; r < k; r++) close(await valuesAsync(outs[r]), gathered, 1e-9, 0, `local allGather cuda:${devices[r]}`);
    const bs = devices.map((d, r) => cudaTensor([r + 1, r + 2], 'f32', `cuda:${d}`));
    await Promise.all(groups.map((g, r) => g.broadcast(bs[r], k - 1).wait()));
    for (let r = 0; r < k; r++) close(await valuesAsync(bs[r]), [k, k + 1], 1e-9, 0, `local broadcast cuda:${devices[r]}`);
    await Promise.all(groups.map((g) => g.barrier().wait()));
    assert.is(thrown(() => groups[0].allReduce(fl.tensor([1]))).code, 'ERR_DEVICE');
    for (const g of groups) g.destroy();
  });
} else {
  console.log(`nccl: skipping the GPU part (${fl.cuda.isAvailable() ? info.reason : 'no CUDA device'})`);
}

test.run();
