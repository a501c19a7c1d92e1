/** A lost or silent rank makes the others fail fast with a named error, never hang. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runRanks, type RankResult } from './harness';

function report(r: RankResult): { failed: boolean; code?: string; message?: string; ms?: number } {
  const line = r.out.split('\n').find((l) => l.startsWith('{"failed"'));
  if (!line) throw new Error(`rank ${r.rank} printed no report (exit ${r.code ?? r.signal}):\n${r.out}`);
  return JSON.parse(line);
}

test('a rank killed during allreduce: the others fail with ERR_PEER_LOST naming a rank', async () => {
  const results = await runRanks('fault.ts', 3, { env: { MODE: 'kill' }, timeoutMs: 60_000 }).done;
  assert.is(results[2].signal, 'SIGKILL');
  for (const r of results.slice(0, 2)) {
    const rep = report(r);
    assert.is(r.code, 3, r.out);
    assert.ok(rep.failed);
    assert.is(rep.code, 'ERR_PEER_LOST', rep.message);
    assert.match(rep.message!, /rank \d/);
    assert.ok(rep.ms! < 15_000, `took ${rep.ms} ms`);
    assert.match(r.out, /"again":"ERR_PEER_LOST"/);
  }
});

test('a silent rank: the others fail with ERR_TIMEOUT after the group timeout', async () => {
  const job = runRanks('fault.ts', 2, { env: { MODE: 'silent', PG_TIMEOUT_MS: '1500' }, timeoutMs: 60_000 });
  const survivor = await new Promise<RankResult>((resolve) => {
    let out = '';
    job.children[0].stdout!.on('data', (d) => (out += d));
    job.children[0].on('close', (code, signal) => resolve({ rank: 0, code, signal, out }));
  });
  job.kill();
  await job.done;
  const rep = report(survivor);
  assert.is(rep.code, 'ERR_TIMEOUT', rep.message);
  assert.match(rep.message!, /rank 1/);
  assert.ok(rep.ms! >= 1000 && rep.ms! < 15_000, `took ${rep.ms} ms`);
});

test.run();
