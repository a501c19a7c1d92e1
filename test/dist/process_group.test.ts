/** Process-group set-up and argument errors, in one process (world size 1). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { freePort, rejection } from './harness';

const env = () => ({ RANK: '0', WORLD_SIZE: '1', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(freePort()), FLOCKML_TOKEN: 'pg-test' });

test('the nccl backend explains why it is unavailable (no GPU/NCCL here)', async () => {
  const info = fl.distributed.isInitialized();
  assert.is(info, false);
  const e = await rejection(fl.distributed.initProcessGroup({ backend: 'nccl', env: env(), timeoutMs: 5000 }));
  assert.is(e.code, 'ERR_NCCL');
  assert.match(e.message, /nccl backend is unavailable|not wired/);
  assert.is(fl.distributed.isInitialized(), false);
});

test('missing launcher environment is reported by name', async () => {
  const e = await rejection(fl.distributed.initProcessGroup({ env: { WORLD_SIZE: '2' } }));
  assert.is(e.code, 'ERR_ARG');
  assert.match(e.message, /RANK/);
});

test('a world of one: collectives are identities, errors are typed', async () => {
  const pg = await fl.distributed.initProcessGroup({ env: env(), timeoutMs: 5000 });
  assert.is(pg.size, 1);
  const t = fl.tensor([1, 2, 3], { dtype: 'f32' });
  const before = Date.now();
  const w = fl.distributed.allReduce(t, { op: 'avg' });
  assert.is(w.completedAt, null);
  await w.wait();
  // Stamped natively when the collective finished: after it was issued, before we saw it.
  assert.ok(w.completedAt! >= before - 1 && w.completedAt! <= Date.now() + 1, `completedAt ${w.completedAt} outside [${before}, now]`);
  assert.equal(Array.from(await t.data(), Number), [1, 2, 3]);
  const e = await rejection(pg.allReduce(fl.tensor([1, 2], { dtype: 'i32' }), { op: 'avg' }).wait());
  assert.is(e.code, 'ERR_DTYPE');
  const out = fl.zeros([3]);
  await pg.allGather(out, t).wait();
  assert.equal(Array.from(await out.data(), Number), [1, 2, 3]);
  const bad = await rejection(pg.allGather(fl.zeros([4]), t).wait());
  assert.is(bad.code, 'ERR_SHAPE');
  await pg.barrier().wait();
  await fl.distributed.destroyProcessGroup();
  assert.throws(() => pg.barrier(), /destroyed/);
});

test.run();
