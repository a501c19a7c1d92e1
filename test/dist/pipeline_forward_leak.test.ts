/** A receive that fails inside DistributedPipeline.forward() frees the activation buffer it was filling. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runRanks } from './harness';

test('2 ranks, the first dies after sending a header: forward() rejects with a code and leaks nothing', async () => {
  const results = await runRanks('pipeline_forward_leak.ts', 2, { timeoutMs: 60_000 }).done;
  assert.is(results[0].signal, 'SIGKILL', results[0].out);
  assert.is(results[1].code, 0, results[1].out);
  const line = results[1].out.split('\n').find((l) => l.startsWith('{'));
  assert.ok(line, results[1].out);
  const { code, leaked } = JSON.parse(line) as { code?: string; leaked: number };
  assert.ok(code?.startsWith('ERR_'), `forward() rejected with ${code}`);
  assert.is(leaked, 0, `${leaked} bytes still held after the failed forward()`);
});

test.run();
