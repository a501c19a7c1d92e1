/** destroyProcessGroup() returns promptly on every live rank, the store's host included, when a peer has died. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runRanks } from './harness';

test('3 ranks, the last one killed: ranks 0 and 1 leave destroyProcessGroup() long before the 30 s timeout', async () => {
  const results = await runRanks('destroy_dead_peer.ts', 3, { timeoutMs: 60_000 }).done;
  assert.is(results[2].signal, 'SIGKILL', results[2].out);
  for (const r of results.slice(0, 2)) {
    assert.is(r.code, 0, r.out);
    const line = r.out.split('\n').find((l) => l.startsWith('{'));
    assert.ok(line, r.out);
    const { destroyMs } = JSON.parse(line) as { destroyMs: number };
    assert.ok(destroyMs < 10_000, `rank ${r.rank} took ${destroyMs} ms in destroyProcessGroup`);
  }
});

test.run();
