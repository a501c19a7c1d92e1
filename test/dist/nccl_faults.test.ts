/**
 * Faults on the nccl backend (issue 36 item 3), on a GPU per rank (simulated under `test/run.ts --sim`),
 * with a 3000 ms group timeout: a rank that stops, a collective mismatch (count or kind), and a rank
 * lost during init. Every other rank gets a coded error within the timeout (plus a margin), later work
 * on the group fails the same way, and every process exits: no hang, no crash. A rank killed
 * mid-allReduce is in fault.test.ts. Workers: workers/nccl_faults.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import { runRanks, survivors, type RankResult } from './harness';
import { NCCL_ENV, ncclRuns } from './nccl_ranks';

const TIMEOUT = 3000;
const MARGIN = 5000;

interface Report {
  failed: boolean;
  code?: string;
  message?: string;
  ms?: number;
}

function report(r: RankResult): Report & { again?: string } {
  const l = r.out.split('\n').find((s) => s.startsWith('{"failed"'));
  if (!l) throw new Error(`rank ${r.rank} printed no report (exit ${r.code ?? r.signal}):\n${r.out}`);
  const again = r.out.split('\n').find((s) => s.startsWith('{"again"'));
  return { ...JSON.parse(l), again: again && JSON.parse(again).again };
}

const env = (mode: string) => ({ ...NCCL_ENV, MODE: mode, PG_TIMEOUT_MS: String(TIMEOUT) });

/** Runs `mode` on `n` ranks to the end; every rank must exit by itself well before the harness's kill. */
async function run(mode: string, n: number): Promise<RankResult[]> {
  const t0 = Date.now();
  const results = await runRanks('nccl_faults.ts', n, { env: env(mode), timeoutMs: 60_000 }).done;
  for (const r of results) assert.is(r.signal, null, `rank ${r.rank} was killed (a hang):\n${r.out}`);
  assert.ok(Date.now() - t0 < 45_000, `the job took ${Date.now() - t0} ms`);
  return results;
}

/** Checks a failed rank's report: `code`, a message matching `message`, within `lo`..timeout+margin ms, and exit 3. */
function failedWith(r: RankResult, code: string, message: RegExp, again: string, lo = 0): void {
  const rep = report(r);
  assert.is(r.code, 3, r.out);
  assert.ok(rep.failed, r.out);
  assert.is(rep.code, code, `rank ${r.rank}: ${rep.code}: ${rep.message}`);
  assert.match(rep.message!, message, rep.message);
  assert.ok(rep.ms! >= lo && rep.ms! < TIMEOUT + MARGIN, `rank ${r.rank} took ${rep.ms} ms`);
  assert.is(rep.again, again, r.out);
}

if (ncclRuns('nccl faults', 3)) {
  // NCCL has no notion of a silent peer: the allReduce hangs until the group's watcher times it out
  // and aborts the communicator (README, "nccl backend").
  test('a rank that stops (alive, never posts the next allReduce): the others fail with ERR_TIMEOUT after the group timeout', async () => {
    const job = runRanks('nccl_faults.ts', 3, { env: env('stop'), timeoutMs: 60_000 });
    const outs = await survivors(job, 2); // then the silent rank is killed
    for (const r of outs) {
      assert.is(r.signal, null, `rank ${r.rank} was killed (a hang):\n${r.out}`);
      failedWith(
        r,
        'ERR_TIMEOUT',
        new RegExp(`^allReduce: allReduce on rank ${r.rank} \\(cuda:${r.rank}\\) did not finish within ${TIMEOUT} ms`),
        'ERR_TIMEOUT',
        TIMEOUT - 100,
      );
    }
  });

  // The simulated NCCL, like NCCL with its checks on, finds the mismatch and reports invalid usage
  // through ncclCommGetAsyncError: every rank fails at once with ERR_NCCL, not after the timeout.
  test('a collective mismatch (rank 0 allReduces 8 elements, ranks 1 and 2 16): every rank fails with ERR_NCCL at once', async () => {
    for (const r of await run('count', 3)) {
      assert.not.match(r.out, 'firstDone', `rank ${r.rank}: the mismatched allReduce itself must fail:\n${r.out}`);
      failedWith(
        r,
        'ERR_NCCL',
        new RegExp(`^allReduce: NCCL (reported an error|failed) on rank ${r.rank} \\(cuda:${r.rank}\\): invalid usage`),
        'ERR_NCCL',
      );
      assert.ok(report(r).ms! < TIMEOUT, `rank ${r.rank} waited out the timeout: ${report(r).ms} ms`);
    }
  });

  // The watcher asks ncclCommGetAsyncError before it settles a finished collective: the first rank to
  // post the mismatched collective used to see it resolve (its output never reduced) about half the
  // time and fail only at its next one.
  test('a collective mismatch (rank 1 broadcasts where rank 0 allReduces): both fail with ERR_NCCL at once', async () => {
    const results = await run('kind', 2);
    const ops = ['allReduce', 'broadcast|allReduce'];
    results.forEach((r, i) => {
      assert.not.match(r.out, 'firstDone', `rank ${i}: the mismatched collective itself must fail:\n${r.out}`);
      failedWith(
        r,
        'ERR_NCCL',
        new RegExp(`^(${ops[i]}): NCCL (reported an error|failed) on rank ${i} \\(cuda:${i}\\): invalid usage`),
        'ERR_NCCL',
      );
    });
    for (const r of results) assert.ok(report(r).ms! < TIMEOUT, `rank ${r.rank} waited out the timeout: ${report(r).ms} ms`);
  });

  // Two timers race: the JS one around the init (lib/distributed/process_group.ts withinTimeout) and
  // the native watcher's; both say ERR_TIMEOUT.
  const initTimeout = (rank: number, n: number) =>
    new RegExp(
      `^(distributed: ncclCommInitRank \\(rank ${rank} of ${n}, cuda:${rank}\\) did not finish within ${TIMEOUT} ms; a rank may be missing` +
        `|(distributed: )?ncclCommInitRank on rank ${rank} \\(cuda:${rank}\\) did not finish within ${TIMEOUT} ms; a peer may not have joined)`,
    );

  test('init: a rank that exits before initProcessGroup: the other rejects with ERR_TIMEOUT from ncclCommInitRank', async () => {
    const results = await run('exit_before_init', 2);
    assert.is(results[1].code, 0);
    failedWith(results[0], 'ERR_TIMEOUT', initTimeout(0, 2), 'nogroup', TIMEOUT - 100);
  });

  test('init: a rank that exits with the NCCL id instead of joining the communicator: the others reject with ERR_TIMEOUT', async () => {
    const results = await run('exit_in_init', 3);
    assert.is(results[2].code, 0);
    for (const r of results.slice(0, 2)) failedWith(r, 'ERR_TIMEOUT', initTimeout(r.rank, 3), 'nogroup', TIMEOUT - 100);
  });

  test('init: a rank that exits once the communicator is ready: the first allReduce fails with ERR_TIMEOUT', async () => {
    const results = await run('exit_after_init', 2);
    assert.is(results[1].code, 0);
    failedWith(
      results[0],
      'ERR_TIMEOUT',
      /^allReduce: allReduce on rank 0 \(cuda:0\) did not finish within 3000 ms/,
      'ERR_TIMEOUT',
      TIMEOUT - 100,
    );
  });
} else {
  test('needs NCCL and three CUDA devices: nothing to check here', () => {
    assert.ok(!fl.cuda.isAvailable() || fl.cuda.deviceCount() < 3 || !native.ncclInfo().available);
  });
}

test.run();
