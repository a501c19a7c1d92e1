/**
 * Ring groups whose ranks span hosts: shared memory among the ranks of each host, TCP between
 * hosts (hier_group.h). FLOCKML_HOST_ID makes the ranks of this machine act as several hosts
 * (workers/hosts.ts sets it per rank from HOST_IDS): 4 ranks as 2 hosts x 2, 3 as 2 + 1, hosts
 * interleaved. Every collective, dtype and odd size through the TCP collectives' worker (the same
 * references), the transport each group picks, a killed rank, a silent one, and mismatches.
 */
import { readdirSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, hosts, line, survivors } from './harness';

const segments = () => new Set(readdirSync('/dev/shm').filter((f) => f.startsWith('flockml-')));

async function leavesNoSegment<T>(job: () => Promise<T>): Promise<T> {
  const before = segments();
  const out = await job();
  const left = [...segments()].filter((f) => !before.has(f));
  assert.equal(left, [], `segments left in /dev/shm: ${left.join(', ')}`);
  return out;
}

for (const [ids, sizes] of [
  ['a,a,b,b', '0,1,7,1000003'],
  ['a,a,b', '0,1,7,1000003'],
  ['a,b,a,b', '0,1,7,4099'],
  ['a,b,b,b', '1,7,4099'],
]) {
  test(`hosts ${ids}: every collective, dtype and op, sizes ${sizes}; send/recv; subgroups`, async () => {
    await leavesNoSegment(async () => expectAllOk(await hosts(ids, 'collectives.ts', { SIZES: sizes }).done));
  });
}

interface Picked {
  transport: string | null;
  sub: string | null;
  segments: string[];
  sum: number | number[];
}

for (const [ids, world, sub] of [
  ['a,a,b,b', 'shm+tcp', 'shm+tcp'], // subgroup 1, 2, 3: host a has one rank, b two
  ['a,a,b', 'shm+tcp', 'tcp'], // subgroup 1, 2: one rank per host
  ['a,b,b', 'shm+tcp', 'shm'], // subgroup 1, 2: one host
  ['a,b,c', 'tcp', 'tcp'], // one rank per host: TCP only
]) {
  test(`hosts ${ids}: the world group picks ${world}, ranks 1.. pick ${sub}; no segment outlives set-up`, async () => {
    const results = await leavesNoSegment(async () => hosts(ids, 'shm_transport.ts').done);
    expectAllOk(results);
    const n = ids.split(',').length;
    for (const r of results) {
      const p = line<Picked>(r, '{"transport"');
      assert.is(p.transport, world, r.out);
      assert.is(p.sub, r.rank === 0 ? null : sub, r.out);
      assert.equal(p.segments, [], r.out);
      assert.is(p.sum, (n * (n + 1)) / 2);
    }
  });
}

test('FLOCKML_TRANSPORT=shm on ranks of two hosts is refused', async () => {
  const results = await hosts('a,a,b', 'shm_transport.ts', { TRANSPORTS: 'shm,shm,shm' }).done;
  for (const r of results) {
    const e = line<{ error: string; message: string }>(r, '{"error"');
    assert.is(e.error, 'ERR_ARG', r.out);
    assert.match(e.message, /FLOCKML_TRANSPORT=shm, but rank 2 runs on another host than rank 0 \(b vs a\)/);
  }
});

test('FLOCKML_TRANSPORT=tcp on ranks of two hosts: tcp', async () => {
  const results = await hosts('a,a,b,b', 'shm_transport.ts', { TRANSPORTS: 'tcp,tcp,tcp,tcp' }).done;
  expectAllOk(results);
  for (const r of results) assert.is(line<Picked>(r, '{"transport"').transport, 'tcp', r.out);
});

test('a bad FLOCKML_HOST_ID is refused', async () => {
  const [r] = await hosts('a b', 'shm_transport.ts').done;
  const e = line<{ error: string; message: string }>(r, '{"error"');
  assert.is(e.error, 'ERR_ARG');
  assert.is(e.message, "distributed: FLOCKML_HOST_ID='a b' must be 1 to 64 letters, digits or . _ : -");
});

interface Failure {
  failed: boolean;
  code?: string;
  message?: string;
  ms?: number;
}

// The last rank dies: one sharing its host with that host's leader (a,a,b,b), a host's only
// rank (a,a,b), the same with the hosts interleaved (a,b,a,b).
for (const ids of ['a,a,b,b', 'a,a,b', 'a,b,a,b']) {
  test(`hosts ${ids}: a rank SIGKILLed during allreduce is named by every other rank; no segment is left`, async () => {
    const n = ids.split(',').length;
    const results = await leavesNoSegment(async () => hosts(ids, 'fault.ts', { MODE: 'kill' }, 60_000).done);
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

test('hosts a,a,b,b: a silent rank makes the others fail with ERR_TIMEOUT naming it', async () => {
  const job = hosts('a,a,b,b', 'fault.ts', { MODE: 'silent', PG_TIMEOUT_MS: '1500' }, 60_000);
  const outs = await survivors(job, 3);
  for (const r of outs) {
    const rep = line<Failure>(r, '{"failed"');
    assert.is(rep.code, 'ERR_TIMEOUT', rep.message);
    assert.match(rep.message!, /rank 3 stopped answering: after 1500 ms it had not joined collective #2/, rep.message);
    assert.ok(rep.ms! >= 1000 && rep.ms! < 15_000, `took ${rep.ms} ms`);
  }
});

// The last rank reduces 1001 elements, the others 1000: on a,a,b,b it differs from its host's
// leader (seen in shared memory); on a,a,b it is a host of its own (seen between the leaders).
for (const ids of ['a,a,b,b', 'a,a,b']) {
  test(`hosts ${ids}: allReduce of 1000 vs 1001 elements fails every rank with ERR_COLLECTIVE_MISMATCH naming both calls`, async () => {
    const n = ids.split(',').length;
    const results = await hosts(ids, 'mismatch.ts', { MODE: 'count' }, 60_000).done;
    for (const r of results) {
      const rep = line<Failure>(r, '{"failed"');
      assert.is(r.code, 3, r.out);
      assert.is(rep.code, 'ERR_COLLECTIVE_MISMATCH', rep.message);
      assert.match(
        rep.message!,
        new RegExp(
          `^allreduce on rank ${r.rank}: collective mismatch on group 0: rank \\d called allReduce\\(f32, 1000 elements\\) as collective #3, ` +
            `rank ${n - 1} called allReduce\\(f32, 1001 elements\\)`,
        ),
      );
      assert.ok(rep.ms! < 10_000, `rank ${r.rank} took ${rep.ms} ms`);
      assert.match(r.out, /"again":"ERR_COLLECTIVE_MISMATCH"/, r.out);
    }
  });
}

test('hosts a,a,b,b: a correct sequence of every collective (mismatch worker, MODE=mixed)', async () => {
  expectAllOk(await hosts('a,a,b,b', 'mismatch.ts', { MODE: 'mixed' }, 60_000).done);
});

test.run();
