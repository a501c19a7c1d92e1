/**
 * send/recv through the shared-memory pipes between ranks of one host (shm_segment.h), in groups
 * on one host and in groups spanning hosts (FLOCKML_HOST_ID, workers/hosts.ts), against TCP:
 * messages longer than a pipe, many in a row, every pair; a header mismatch; a silent and a
 * killed sender.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, hosts, line, runRanks, type RankResult } from './harness';

for (const [what, job, transport] of [
  ['3 ranks on one host', () => runRanks('p2p.ts', 3), 'shm'],
  ['3 ranks over TCP', () => runRanks('p2p.ts', 3, { env: { FLOCKML_TRANSPORT: 'tcp' } }), 'tcp'],
  ['hosts a,a,b,b (pipes within a host, TCP across)', () => hosts('a,a,b,b', 'p2p.ts'), 'shm+tcp'],
] as const) {
  test(`send/recv on ${what}: longer than a pipe, 50 in a row, every pair, every direction`, async () => {
    const results = await job().done;
    expectAllOk(results);
    for (const r of results) assert.equal(line(r, '{"ok"'), { ok: true, transport }, r.out);
  });
}

interface Failure {
  failed: boolean;
  code?: string;
  message?: string;
  ms?: number;
}

test('shm: a recv from a rank that never sends fails with ERR_TIMEOUT naming it, through the pipe', async () => {
  const job = runRanks('p2p.ts', 2, { env: { MODE: 'silent', PG_TIMEOUT_MS: '1500' }, timeoutMs: 60_000 });
  const r0 = await new Promise<RankResult>((resolve) => {
    let out = '';
    job.children[0].stdout!.on('data', (d) => (out += d));
    job.children[0].stderr!.on('data', (d) => (out += d));
    job.children[0].on('close', (code, signal) => resolve({ rank: 0, code, signal, out }));
  });
  job.kill();
  await job.done;
  const rep = line<Failure>(r0, '{"failed"');
  assert.is(rep.code, 'ERR_TIMEOUT', rep.message);
  assert.is(rep.message, 'recv on rank 0: rank 1 sent nothing for 1500 ms (is it alive and calling the matching send?)');
  assert.ok(rep.ms! >= 1000 && rep.ms! < 15_000, `took ${rep.ms} ms`);
});

for (const ids of ['', 'a,a,b']) {
  test(`shm${ids ? ` (hosts ${ids})` : ''}: a sender SIGKILLed while its peer waits in recv is named`, async () => {
    const env = { MODE: 'kill' };
    const results = await (ids ? hosts(ids, 'p2p.ts', env, 60_000) : runRanks('p2p.ts', 2, { env, timeoutMs: 60_000 })).done;
    assert.is(results[1].signal, 'SIGKILL');
    const rep = line<Failure>(results[0], '{"failed"');
    assert.is(rep.code, 'ERR_PEER_LOST', rep.message);
    assert.match(rep.message!, /^recv on rank 0: (lost connection to rank 1|rank 1 was lost)/, rep.message);
    assert.ok(rep.ms! < 15_000, `took ${rep.ms} ms`);
  });
}

test('shm: send of 10 elements against recv of 11: the receiver fails naming both, the sender at its next call', async () => {
  const results = await runRanks('mismatch.ts', 2, { env: { MODE: 'p2p', FLOCKML_TRANSPORT: 'shm' }, timeoutMs: 60_000 }).done;
  const [r0, r1] = results.map((r) => line<Failure>(r, '{"failed"'));
  assert.is(
    r1.message,
    'recv on rank 1: send/recv mismatch on group 0: rank 0 called send(f32, 10 elements) as its message #1 to rank 1, ' +
      'rank 1 called recv(f32, 11 elements) from rank 0',
  );
  assert.match(r0.message!, /^barrier on rank 0: send\/recv mismatch on group 0: .* \(reported by rank 1\)$/);
});

test('shm: mixed collectives and send/recv in a row stay right on 3 ranks, and on hosts a,a,b,b', async () => {
  expectAllOk(await runRanks('mismatch.ts', 3, { env: { MODE: 'mixed', FLOCKML_TRANSPORT: 'shm' }, timeoutMs: 60_000 }).done);
  expectAllOk(await hosts('a,a,b,b', 'mismatch.ts', { MODE: 'mixed' }, 60_000).done);
});

test.run();
