/**
 * Faults on the nccl backend (test/dist/nccl_faults.test.ts), with PG_TIMEOUT_MS as the group timeout.
 * The faulty rank is the last one. MODE=
 * - stop: after one allReduce together, it stays alive but never posts the next one;
 * - count: rank 0 allReduces 8 elements, the others 16 (a collective mismatch);
 * - kind: the last rank broadcasts where the others allReduce (a collective mismatch);
 * - exit_before_init: it exits before calling initProcessGroup (the others wait in the store);
 * - exit_in_init: it exits once it has the NCCL unique id, instead of joining the communicator;
 * - exit_after_init: it exits once the communicator is ready, before the first collective.
 * Every other rank (and, in the mismatch modes, every rank) prints its failure as JSON
 * (report.ts: code, message, time from the faulty step) and exits 3; a failure before the group
 * exists is printed the same way, with `again` = 'nogroup', and exits 3.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup } from '../../../lib/distributed/index';
import { native } from '../../../lib/native';
import { reportFailure } from './report';
import { backend, device } from './backend';

const mode = process.env.MODE ?? 'stop';
const rank = Number(process.env.RANK ?? 0);
const faulty = rank === Number(process.env.WORLD_SIZE ?? 1) - 1;
const timeoutMs = Number(process.env.PG_TIMEOUT_MS ?? 30_000);

function initFailed(e: unknown, started: number): never {
  const err = e as Error & { code?: string };
  console.log(JSON.stringify({ failed: true, code: err.code, message: err.message, ms: Date.now() - started }));
  console.log(JSON.stringify({ again: 'nogroup' }));
  process.exit(3);
}

async function main() {
  if (faulty && mode === 'exit_before_init') process.exit(0);
  if (faulty && mode === 'exit_in_init') {
    // The id has come through the store; the rank dies instead of joining the communicator.
    const n = native as unknown as Record<string, unknown>;
    n.ncclInitRank = () => process.exit(0);
  }
  const started = Date.now();
  let pg: Awaited<ReturnType<typeof initProcessGroup>>;
  try {
    pg = await initProcessGroup({ backend, timeoutMs });
  } catch (e) {
    initFailed(e, started);
  }
  if (faulty && mode === 'exit_after_init') process.exit(0);
  const t = fl.ones([16], { device });
  if (mode === 'stop') {
    await pg.allReduce(t).wait(); // everyone is connected and working
    if (faulty) {
      // Alive and silent: never posts the next allReduce; the test kills it once the others are done.
      setInterval(() => undefined, 1000);
      return;
    }
  }
  const step = Date.now();
  try {
    if (mode === 'count') {
      const x = fl.ones([rank === 0 ? 8 : 16], { device });
      await pg.allReduce(x).wait();
    } else if (mode === 'kind' && faulty) {
      await pg.broadcast(t, 0).wait();
    } else {
      await pg.allReduce(t).wait();
    }
    console.log(JSON.stringify({ firstDone: Date.now() - step }));
    // One more step, so a mismatch that let the first call through still has to show.
    await pg.allReduce(t).wait();
    console.log(JSON.stringify({ failed: false, sum: Array.from((await t.to('cpu').data()) as Float32Array).slice(0, 2) }));
    process.exit(0);
  } catch (e) {
    await reportFailure(pg, e, step);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
