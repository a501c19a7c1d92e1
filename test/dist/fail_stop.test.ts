/**
 * Fail-stop across ranks (README "Execution"): one rank's step fails mid-backward; every rank's
 * syncGradients or step rejects, none applies the step, and the job trains on with the next batch.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, line, runRanks } from './harness';

interface Result {
  rank: number;
  errors: { step: number; code?: string; message: string; where: string }[];
  unchanged: boolean;
  maxDiff: number;
  sameAsRank0: boolean;
}

for (const [strategy, transport, n, mode, failRank] of [
  ['ddp', 'shm', 2, 'index', 1],
  ['ddp', 'shm', 3, 'oom', 2],
  ['ddp', 'tcp', 2, 'oom', 0],
  ['ddp', 'tcp', 3, 'index', 1],
  ['zero1', 'shm', 2, 'index', 0],
  ['zero2', 'tcp', 3, 'oom', 1],
  ['fsdp', 'shm', 3, 'index', 2],
  ['fsdp', 'tcp', 2, 'oom', 1],
] as const) {
  test(`${strategy}, ${transport}, ${n} ranks: rank ${failRank}'s ${mode === 'index' ? 'out-of-range target' : 'failed allocation'} fails step 2 on every rank; training goes on`, async () => {
    const results = await runRanks('fail_stop.ts', n, {
      env: { STRATEGY: strategy, FLOCKML_TRANSPORT: transport, MODE: mode, FAIL_RANK: String(failRank), FAIL_STEP: '2' },
    }).done;
    expectAllOk(results);
    for (const r of results) {
      const res = line<Result>(r, '{"result"');
      assert.is(res.errors.length, 1, `rank ${r.rank}: ${JSON.stringify(res.errors)}`);
      const e = res.errors[0];
      assert.is(e.step, 2);
      if (r.rank === failRank) {
        assert.is(e.code, mode === 'index' ? 'ERR_INDEX' : 'ERR_OOM', e.message);
      } else {
        assert.is(e.code, 'ERR_PEER_FAILED', e.message);
        // Where the step's first collective is awaited.
        assert.is(e.where, strategy === 'zero1' ? 'step' : 'syncGradients');
        assert.match(e.message, new RegExp(`rank ${failRank} failed earlier \\(${mode === 'index' ? 'ERR_INDEX' : 'ERR_OOM'}\\)`));
      }
      assert.ok(res.unchanged, `rank ${r.rank}: the failed step changed parameters or optimizer state`);
      assert.ok(res.sameAsRank0, `rank ${r.rank}: parameters differ from rank 0's`);
      assert.ok(res.maxDiff < 1e-5, `rank ${r.rank}: ${res.maxDiff} from the run that skipped the bad batch`);
    }
  });
}

test.run();
