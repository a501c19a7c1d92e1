/**
 * The ring backend's shared-memory transport: ranks on one host move collective data through a
 * shared segment. Every collective, dtype and odd size (through the TCP collectives' worker), how
 * the transport is chosen, a killed rank, a collective mismatch, and no segment left in /dev/shm.
 */
import { readdirSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, line, runRanks, survivors } from './harness';

// The ring backend's segments; the CUDA simulator's NCCL (flockml-nccl-*) belongs to other jobs.
const segments = () => new Set(readdirSync('/dev/shm').filter((f) => f.startsWith('flockml-') && !f.startsWith('flockml-nccl-')));

/** Fails when a job left a flockml segment behind in /dev/shm that was not there before it. */
async function leavesNoSegment<T>(job: () => Promise<T>): Promise<T> {
  const before = segments();
  const out = await job();
  const left = [...segments()].filter((f) => !before.has(f));
  assert.equal(left, [], `segments left in /dev/shm: ${left.join(', ')}`);
  return out;
}

for (const n of [2, 3, 4]) {
  test(`shm collectives on ${n} ranks: all dtypes and ops, sizes 0, 1, 7, 1000003; send/recv; subgroups`, async () => {
    await leavesNoSegment(async () =>
      expectAllOk(await runRanks('collectives.ts', n, { env: { FLOCKML_TRANSPORT: 'shm', SIZES: '0,1,7,1000003' } }).done),
    );
  });
}

test('FLOCKML_TRANSPORT=tcp keeps collectives on TCP on one host', async () => {
  expectAllOk(await runRanks('collectives.ts', 3, { env: { FLOCKML_TRANSPORT: 'tcp', SIZES: '1,7,4099' } }).done);
});

interface Picked {
  transport: string | null;
  sub: string | null;
  segments: string[];
  sum: number | number[];
}

test('ranks on one host pick shm by themselves, subgroups too; names are unlinked once every rank has mapped them', async () => {
  const results = await leavesNoSegment(async () => runRanks('shm_transport.ts', 3).done);
  expectAllOk(results);
  for (const r of results) {
    const p = line<Picked>(r, '{"transport"');
    assert.is(p.transport, 'shm', r.out);
    assert.is(p.sub, r.rank === 0 ? null : 'shm', r.out);
    assert.equal(p.segments, [], r.out);
    assert.is(p.sum, 6);
    assert.match(r.out, /\{"destroyed":null\}/);
  }
});

test('FLOCKML_TRANSPORT=tcp on every rank: tcp', async () => {
  const results = await runRanks('shm_transport.ts', 2, { env: { TRANSPORTS: 'tcp,tcp' } }).done;
  expectAllOk(results);
  for (const r of results) {
    const p = line<Picked>(r, '{"transport"');
    assert.is(p.transport, 'tcp', r.out);
    assert.is(p.sum, 3);
  }
});

test('ranks that disagree on FLOCKML_TRANSPORT all fail with ERR_ARG naming each choice', async () => {
  const results = await leavesNoSegment(async () => runRanks('shm_transport.ts', 2, { env: { TRANSPORTS: 'tcp,shm' } }).done);
  for (const r of results) {
    const e = line<{ error: string; message: string }>(r, '{"error"');
    assert.is(e.error, 'ERR_ARG', r.out);
    assert.is(e.message, 'distributed: the ranks of group 0 disagree on FLOCKML_TRANSPORT (rank 0: tcp, rank 1: shm)', r.out);
  }
});

test('an unknown FLOCKML_TRANSPORT is refused', async () => {
  const [r] = await runRanks('shm_transport.ts', 1, { env: { TRANSPORTS: 'udp' } }).done;
  const e = line<{ error: string; message: string }>(r, '{"error"');
  assert.is(e.error, 'ERR_ARG');
  assert.is(e.message, 'distributed: FLOCKML_TRANSPORT=udp is not one of auto, tcp, shm');
});

interface Failure {
  failed: boolean;
  code?: string;
  message?: string;
  ms?: number;
}

for (const n of [2, 4]) {
  test(`shm: a rank SIGKILLed during allreduce on ${n} ranks is named by every other rank; no segment is left`, async () => {
    const results = await leavesNoSegment(
      async () => runRanks('fault.ts', n, { env: { MODE: 'kill', FLOCKML_TRANSPORT: 'shm' }, timeoutMs: 60_000 }).done,
    );
    assert.is(results[n - 1].signal, 'SIGKILL');
    for (const r of results.slice(0, n - 1)) {
      const rep = line<Failure>(r, '{"failed"');
      assert.is(r.code, 3, r.out);
      assert.is(rep.code, 'ERR_PEER_LOST', rep.message);
      assert.match(rep.message!, new RegExp(`^allreduce on rank ${r.rank}: rank ${n - 1} was lost`), rep.message);
      assert.ok(rep.ms! < 15_000, `took ${rep.ms} ms`);
      assert.match(r.out, /"again":"ERR_PEER_LOST"/);
    }
  });
}

test('shm: a silent rank makes the others fail with ERR_TIMEOUT naming it', async () => {
  const job = runRanks('fault.ts', 3, { env: { MODE: 'silent', PG_TIMEOUT_MS: '1500', FLOCKML_TRANSPORT: 'shm' }, timeoutMs: 60_000 });
  const outs = await survivors(job, 2);
  for (const r of outs) {
    const rep = line<Failure>(r, '{"failed"');
    assert.is(rep.code, 'ERR_TIMEOUT', rep.message);
    assert.match(rep.message!, /rank 2 stopped answering: after 1500 ms it had not joined collective #2/, rep.message);
    assert.ok(rep.ms! >= 1000 && rep.ms! < 15_000, `took ${rep.ms} ms`);
  }
});

test('shm: allReduce of 1000 vs 1001 elements fails every rank with ERR_COLLECTIVE_MISMATCH naming both calls', async () => {
  const results = await runRanks('mismatch.ts', 3, { env: { MODE: 'count', FLOCKML_TRANSPORT: 'shm' }, timeoutMs: 60_000 }).done;
  for (const r of results) {
    const rep = line<Failure>(r, '{"failed"');
    assert.is(r.code, 3, r.out);
    assert.is(rep.code, 'ERR_COLLECTIVE_MISMATCH', rep.message);
    assert.match(
      rep.message!,
      new RegExp(
        `^allreduce on rank ${r.rank}: collective mismatch on group 0: rank \\d called allReduce\\(f32, 1000 elements\\) as collective #3, ` +
          'rank 2 called allReduce\\(f32, 1001 elements\\)',
      ),
    );
    assert.ok(rep.ms! < 10_000, `rank ${r.rank} took ${rep.ms} ms`);
    assert.match(r.out, /"again":"ERR_COLLECTIVE_MISMATCH"/, r.out);
  }
});

test('shm: broadcast on one rank against allReduce on the other: both fail naming both calls', async () => {
  const results = await runRanks('mismatch.ts', 2, { env: { MODE: 'op', FLOCKML_TRANSPORT: 'shm' }, timeoutMs: 60_000 }).done;
  const both =
    'collective mismatch on group 0: rank 0 called broadcast(f32, 1000 elements, root 0) as collective #3, rank 1 called allReduce(f32, 1000 elements)';
  for (const [r, op] of [
    [0, 'broadcast'],
    [1, 'allreduce'],
  ] as const) {
    const rep = line<Failure>(results[r], '{"failed"');
    assert.is(rep.code, 'ERR_COLLECTIVE_MISMATCH', rep.message);
    assert.is(rep.message!.replace(/ \(reported by rank \d+\)$/, ''), `${op} on rank ${r}: ${both}`);
  }
});

test.run();
