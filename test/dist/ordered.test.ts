/** Ordered ring collectives: later ops on the device wait for them; a failed one fails those ops. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, runRanks } from './harness';

for (const n of [2, 3]) {
  test(`ordered collectives on ${n} ranks: the next op reads the result without awaiting`, async () => {
    expectAllOk(await runRanks('ordered.ts', n).done);
  });
}

test('an ordered allReduce whose peer left fails the op queued after it with a code', async () => {
  const results = await runRanks('ordered.ts', 2, { env: { MODE: 'die', PG_TIMEOUT_MS: '3000' }, timeoutMs: 60_000 }).done;
  const r0 = results.find((r) => r.rank === 0);
  assert.ok(r0, 'rank 0 ran');
  assert.is(r0.code, 0, r0.out);
  assert.match(r0.out, /rank 0: failed with ERR_[A-Z_]+/);
});

test.run();
