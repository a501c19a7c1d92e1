/** A lost or silent rank makes the others fail fast with a named error, never hang. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runRanks, survivors as outputsOf, type RankResult } from './harness';
import { NCCL_ENV, ncclRuns, ringRuns } from './nccl_ranks';

function report(r: RankResult): { failed: boolean; code?: string; message?: string; ms?: number } {
  const line = r.out.split('\n').find((l) => l.startsWith('{"failed"'));
  if (!line) throw new Error(`rank ${r.rank} printed no report (exit ${r.code ?? r.signal}):\n${r.out}`);
  return JSON.parse(line);
}

// nccl with a GPU per rank (simulated under test:sim): NCCL has no notion of a lost peer, so the
// collective hangs until the group's watcher times it out and aborts the communicator (README,
// "nccl backend"): every survivor fails within the timeout, and so does later work on the group.
if (ncclRuns('fault', 4))
  test('nccl: a rank killed during allreduce: every other rank fails with a coded error within the timeout, and again after', async () => {
    const results = await runRanks('fault.ts', 4, { env: { ...NCCL_ENV, MODE: 'kill', PG_TIMEOUT_MS: '3000' }, timeoutMs: 60_000 }).done;
    assert.is(results[3].signal, 'SIGKILL');
    for (const r of results.slice(0, 3)) {
      const rep = report(r);
      assert.is(r.code, 3, r.out);
      assert.ok(['ERR_TIMEOUT', 'ERR_PEER_LOST'].includes(rep.code ?? ''), `${rep.code}: ${rep.message}`);
      assert.match(rep.message!, new RegExp(`allReduce on rank ${r.rank} \\(cuda:${r.rank}\\)`), rep.message);
      assert.ok(rep.ms! < 3000 + 5000, `took ${rep.ms} ms`);
      assert.match(r.out, /"again":"ERR_(TIMEOUT|PEER_LOST)"/);
    }
  });

if (ringRuns) {
  // Four ranks: rank 1 is no ring neighbour of rank 3, yet it must name rank 3, not the neighbour
  // whose connection closed first.
  test('a rank killed during allreduce: every other rank fails with ERR_PEER_LOST naming it', async () => {
    const results = await runRanks('fault.ts', 4, { env: { MODE: 'kill' }, timeoutMs: 60_000 }).done;
    assert.is(results[3].signal, 'SIGKILL');
    for (const r of results.slice(0, 3)) {
      const rep = report(r);
      assert.is(r.code, 3, r.out);
      assert.ok(rep.failed);
      assert.is(rep.code, 'ERR_PEER_LOST', rep.message);
      assert.match(rep.message!, new RegExp(`^allreduce on rank ${r.rank}: rank 3 was lost`), rep.message);
      assert.ok(rep.ms! < 15_000, `took ${rep.ms} ms`);
      assert.match(r.out, /"again":"ERR_PEER_LOST"/);
    }
  });

  /** Runs `mode` on 4 ranks and returns the reports of ranks 0-2; the last rank is killed after. */
  async function survivors(mode: string): Promise<ReturnType<typeof report>[]> {
    const job = runRanks('fault.ts', 4, { env: { MODE: mode, PG_TIMEOUT_MS: '1500' }, timeoutMs: 60_000 });
    const outs = await outputsOf(job, 3);
    return outs.map(report);
  }

  test('a silent rank: every other rank fails with ERR_TIMEOUT naming it after the group timeout', async () => {
    for (const rep of await survivors('silent')) {
      assert.is(rep.code, 'ERR_TIMEOUT', rep.message);
      assert.match(rep.message!, /rank 3 stopped answering: after 1500 ms it had not joined collective #2/, rep.message);
      assert.ok(rep.ms! >= 1000 && rep.ms! < 15_000, `took ${rep.ms} ms`);
    }
  });

  test('a rank that destroys its group mid-job: the others are told so', async () => {
    for (const rep of await survivors('destroy')) {
      assert.is(rep.code, 'ERR_PEER_LOST', rep.message);
      assert.match(rep.message!, /rank 3 has destroyed the process group/, rep.message);
    }
  });
}

test.run();
