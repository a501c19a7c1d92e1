/**
 * The parameter-server example end to end: 1 server + 3 workers, staleness 2, one epoch of
 * Fashion-MNIST with the MLP trains (≥ 0.80 test accuracy), and no push is staler than 2 clocks.
 * The order in which asynchronous pushes land varies from run to run, and so does the accuracy:
 * 0.832-0.851 over nine runs, so the 0.84 that one epoch usually reaches is not asserted here.
 * About 15-25 s on 2 cores.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runRanks, expectAllOk } from './harness';

const lines = (out: string) =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test('staleness 2, 3 workers + 1 server: the Fashion-MNIST MLP trains to 0.80 test accuracy in one epoch', async () => {
  const results = await runRanks('../../../examples/parameter_server_fashion_mnist.ts', 4, {
    args: ['--epochs', '1', '--staleness', '2'],
    timeoutMs: 120_000,
  }).done;
  expectAllOk(results);
  const server = lines(results[0].out);
  const summary = server.find((l) => l.example === 'parameter-server-fashion-mnist');
  assert.ok(summary, results[0].out);
  console.log(JSON.stringify(summary));
  assert.ok((summary.test_acc as number) >= 0.8, `test accuracy ${summary.test_acc}`);
  const stats = server.find((l) => l.role === 'server')!;
  assert.ok((stats.maxStaleness as number) <= 2);
  assert.is(stats.updates, 3 * 625, 'one update per push: 60 000 images, batch 32, 3 workers');
  for (const r of results.slice(1)) {
    const w = lines(r.out).find((l) => l.role === 'worker')!;
    assert.ok((w.maxStaleness as number) <= 2, JSON.stringify(w));
    assert.is(w.pushes, 625);
  }
});

test.run();
