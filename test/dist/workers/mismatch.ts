/**
 * Collective mismatches on the ring backend. After two matching allReduces, the ranks disagree on
 * collective #3 as MODE says; every rank prints what its call failed with (JSON) and exits 3.
 * MODE=count: the last rank reduces 1001 elements, the others 1000. MODE=dtype: the last rank i32.
 * MODE=algorithms: the last rank reduces 1000 elements (recursive doubling on 4 ranks), the others
 * 100,000 (the ring).
 * MODE=op: rank 0 broadcasts while the others allReduce. MODE=p2p: rank 0 sends 10 elements and
 * rank 1 receives 11. MODE=mixed: a correct sequence of every collective, checked.
 */
import * as fl from '../../../lib/index';
import { reportFailure } from './report';
import { close } from '../../helpers/reference';
import { valuesAsync } from '../../helpers/values';
import { initProcessGroup, destroyProcessGroup } from '../../../lib/distributed/index';

/** `t` equals `want(i)` at each i. */
async function check(what: string, t: fl.Tensor, want: (i: number) => number): Promise<void> {
  const got = await valuesAsync(t);
  close(
    got,
    got.map((_, i) => want(i)),
    0,
    0,
    what,
    false,
  );
}

async function mixed(pg: Awaited<ReturnType<typeof initProcessGroup>>): Promise<void> {
  const n = pg.size,
    r = pg.rank;
  for (let round = 0; round < 3; round++) {
    const a = fl.full([1000 + round], r + 1);
    await pg.allReduce(a).wait();
    await check('allReduce', a, () => (n * (n + 1)) / 2);
    const b = fl.full([7], r === 1 ? 42 : 0, { dtype: 'i32' });
    await pg.broadcast(b, 1).wait();
    await check('broadcast', b, () => 42);
    const gin = fl.full([3], r, { dtype: 'f64' }),
      gout = fl.zeros([3 * n], { dtype: 'f64' });
    await pg.allGather(gout, gin).wait();
    await check('allGather', gout, (i) => Math.floor(i / 3));
    const sin = fl.full([2 * n], 1),
      sout = fl.zeros([2]);
    await pg.reduceScatter(sout, sin, { op: 'sum' }).wait();
    await check('reduceScatter', sout, () => n);
    const m = fl.full([5], 1),
      mx = fl.full([5], r);
    await pg.allReduce(mx, { op: 'max' }).wait();
    await check('allReduce(max)', mx, () => n - 1);
    await pg.allReduce(m, { op: 'avg' }).wait();
    // Around the ring by send/recv: even ranks send first, so no two ranks wait on each other.
    const next = (r + 1) % n,
      prev = (r + n - 1) % n;
    const out = fl.full([4 + round], r, { dtype: 'i64' }),
      inn = fl.zeros([4 + round], { dtype: 'i64' });
    if (r % 2 === 0) {
      await pg.send(out, next).wait();
      await pg.recv(inn, prev).wait();
    } else {
      await pg.recv(inn, prev).wait();
      await pg.send(out, next).wait();
    }
    await check('recv', inn, () => prev);
    await pg.barrier().wait();
  }
}

async function main() {
  const mode = process.env.MODE ?? 'count';
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: 20_000 });
  const last = pg.rank === pg.size - 1;
  if (mode === 'mixed') {
    await mixed(pg);
    console.log(JSON.stringify({ failed: false }));
    await destroyProcessGroup();
    return;
  }
  for (let i = 0; i < 2; i++) await pg.allReduce(fl.ones([16])).wait();
  const started = Date.now();
  try {
    if (mode === 'count') await pg.allReduce(fl.ones([last ? 1001 : 1000])).wait();
    // Across the 256 KiB line between recursive doubling and the ring: the ranks run different algorithms.
    else if (mode === 'algorithms') await pg.allReduce(fl.ones([last ? 1000 : 100_000])).wait();
    else if (mode === 'dtype') await pg.allReduce(fl.ones([1000], { dtype: last ? 'i32' : 'f32' })).wait();
    else if (mode === 'op') await (pg.rank === 0 ? pg.broadcast(fl.ones([1000]), 0) : pg.allReduce(fl.ones([1000]))).wait();
    else if (mode === 'p2p') {
      if (pg.rank === 0) await pg.send(fl.ones([10]), 1).wait();
      else if (pg.rank === 1) await pg.recv(fl.zeros([11]), 0).wait();
      await pg.barrier().wait(); // where rank 0 (whose send went out) learns of it
    }
    console.log(JSON.stringify({ failed: false }));
    process.exit(0);
  } catch (e) {
    await reportFailure(pg, e, started);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
