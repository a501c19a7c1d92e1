/**
 * One rank of the allreduce benchmark (started by allreduce.ts). Sweeps sizes like nccl-tests:
 * warm-up, timed iterations, a correctness check per size; rank 0 prints one JSON line each.
 * BENCH_HOSTS=H: the ranks act as H hosts of equal size (FLOCKML_HOST_ID set per rank before the
 * group starts), so the group is hierarchical ('shm+tcp'); anything else is refused.
 */
import * as fl from '../lib/index';
import { initProcessGroup, destroyProcessGroup } from '../lib/distributed/index';

const MIN = Number(process.env.BENCH_MIN_BYTES ?? 4096);
const MAX = Number(process.env.BENCH_MAX_BYTES ?? 256 << 20);
const FACTOR = Number(process.env.BENCH_FACTOR ?? 4);

// Fewer iterations for large sizes: the sweep must finish in minutes on a laptop.
const itersFor = (bytes: number) => Math.max(5, Math.min(50, Math.floor((64 << 20) / bytes)));

async function main() {
  const hosts = Number(process.env.BENCH_HOSTS ?? 0);
  if (hosts) {
    const rank = Number(process.env.RANK),
      size = Number(process.env.WORLD_SIZE);
    if (size % hosts) throw new Error(`BENCH_HOSTS=${hosts} does not divide ${size} ranks`);
    process.env.FLOCKML_HOST_ID = `bench-host-${Math.floor(rank / (size / hosts))}`;
  }
  const pg = await initProcessGroup({ backend: 'ring' });
  const n = pg.size;
  if (hosts && pg.transport !== 'shm+tcp')
    throw new Error(`BENCH_HOSTS=${hosts}: the group's transport is ${pg.transport}, expected shm+tcp`);
  for (let bytes = MIN; bytes <= MAX; bytes *= FACTOR) {
    const t = fl.full([bytes / 4], 1);
    await pg.allReduce(t).wait(); // warm-up
    await pg.allReduce(t).wait();
    fl.tidy(() => fl.zeros([0]));
    const iters = itersFor(bytes);
    const times: number[] = [];
    for (let i = 0; i < iters; i++) {
      await pg.barrier().wait();
      const t0 = process.hrtime.bigint();
      await pg.allReduce(t).wait();
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    // Values grew as n^(2 + iters): check the last one with a fresh allreduce of ones instead.
    const check = fl.full([Math.min(bytes / 4, 1024)], 1);
    await pg.allReduce(check).wait();
    const wrong = Array.from(await check.data(), Number).filter((v) => v !== n).length;
    // The median as Python's statistics.median takes it (the anchor's): even counts average the middle two.
    times.sort((a, b) => a - b);
    const mid = times.length >> 1;
    const ms = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
    const algbw = bytes / (ms / 1e3) / 1e9;
    if (pg.rank === 0)
      console.log(
        JSON.stringify({
          bench: 'allreduce',
          backend: `ring-${pg.transport}`,
          ranks: n,
          bytes,
          iters,
          ms: +ms.toFixed(3),
          algbw_gbps: +algbw.toFixed(3),
          busbw_gbps: +((algbw * (2 * (n - 1))) / n).toFixed(3),
          wrong,
        }),
      );
    t.dispose();
    check.dispose();
  }
  await destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
