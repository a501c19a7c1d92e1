/**
 * fl.parallel.ParameterServer on real processes over loopback: staleness 0 equals synchronous SGD
 * (through shared memory, and bit for bit the same over TCP),
 * staleness stays within its bound, a killed worker is dropped while the others go on (and a
 * replacement joins at the current parameters), a lost server fails the workers naming it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runRanks, expectAllOk, type RankResult } from './harness';

type Report = Record<string, unknown> & {
  rank: number;
  server?: {
    pushes: number;
    updates: number;
    maxStaleness: number;
    staleness: Record<string, number>;
    joined: number[];
    left: number[];
    dropped: Array<{ rank: number; reason: string }>;
  };
  worker?: { clock: number; pushes: number; maxStaleness: number; staleness: Record<string, number> };
};

function reportOf(r: RankResult): Report {
  const line = r.out.split('\n').find((l) => l.startsWith('{"ps"'));
  if (!line) throw new Error(`rank ${r.rank} printed no report (exit ${r.code ?? r.signal}):\n${r.out}`);
  return JSON.parse(line);
}

async function run(mode: string, n: number, env: NodeJS.ProcessEnv = {}): Promise<RankResult[]> {
  return runRanks('parameter_server.ts', n, { env: { MODE: mode, ...env }, timeoutMs: 90_000 }).done;
}

test('staleness 0 on 2 servers and 2 workers equals single-process SGD (momentum, weight decay) on the averaged gradient', async () => {
  const results = await run('sync', 4);
  expectAllOk(results);
  const [s0, s1, w0, w1] = results.map(reportOf);
  assert.ok((w0.gap as number) <= 1e-6, `gap ${w0.gap}`);
  assert.ok((w0.moved as number) > 0.05, `the parameters hardly moved (${w0.moved}), so the comparison would prove little`);
  assert.equal(w0.stale, [0, 0, 0, 0, 0]);
  assert.equal(w1.stale, [0, 0, 0, 0, 0]);
  // On one host the gradients and parameters go through shared memory.
  assert.is(w0.transport, 'shm');
  assert.is(w1.transport, 'shm');
  // Shards balanced by bytes: the 6x5 weight (120 B) alone, the rest (20 + 60 + 12 B) on the other.
  assert.equal(s0.shards, [[0], [1, 2, 3]]);
  for (const s of [s0, s1]) {
    // One optimizer step per round, each averaging both workers' pushes.
    assert.is(s.server!.pushes, 10);
    assert.is(s.server!.updates, 5);
    assert.is(s.server!.maxStaleness, 0);
    assert.equal([...s.server!.left].sort(), [2, 3]);
  }
});

test('FLOCKML_TRANSPORT=tcp: the same run over the sockets ends with bit-identical parameters to FLOCKML_TRANSPORT=shm', async () => {
  const [shm, tcp] = [await run('sync', 4, { FLOCKML_TRANSPORT: 'shm' }), await run('sync', 4, { FLOCKML_TRANSPORT: 'tcp' })];
  expectAllOk(shm);
  expectAllOk(tcp);
  for (const w of [2, 3]) {
    const a = reportOf(shm[w]),
      b = reportOf(tcp[w]);
    assert.is(a.transport, 'shm');
    assert.is(b.transport, 'tcp');
    assert.ok((a.got as number[]).length > 50);
    assert.equal(b.got, a.got);
  }
  assert.ok((reportOf(tcp[2]).gap as number) <= 1e-6);
});

test('FLOCKML_TRANSPORT=shm with a server that cannot map shared memory fails with ERR_IO naming it; auto falls back to TCP', async () => {
  const results = await run('noshm', 3);
  expectAllOk(results);
  const [server, strict, auto] = results.map(reportOf);
  assert.is(strict.code, 'ERR_IO');
  assert.match(
    strict.message as string,
    /^ParameterServer\.create on rank 1: FLOCKML_TRANSPORT=shm, but parameter server rank 0 could not map/,
  );
  assert.is(auto.transport, 'tcp');
  assert.is(auto.worker!.pushes, 3);
  assert.is(server.server!.pushes, 3);
});

test('staleness 1 with a slowed worker: every push within the bound, and the fast workers use it', async () => {
  const results = await run('stale', 4);
  expectAllOk(results);
  const [server, ...workers] = results.map(reportOf);
  assert.ok(server.server!.maxStaleness <= 1);
  assert.is(server.server!.pushes, 60);
  assert.is(server.server!.updates, 60);
  for (const w of workers) {
    assert.is(w.early, 'ERR_ARG', 'a push before any pull is refused');
    assert.is(w.worker!.pushes, 20);
    assert.ok(w.worker!.maxStaleness <= 1, JSON.stringify(w.worker));
    assert.ok((w.pulls as number[]).every((s) => s <= 1));
  }
  // The two fast workers ran ahead of the slow one by the full bound at some point.
  assert.ok(
    workers.slice(0, 2).some((w) => (w.worker!.staleness['1'] ?? 0) > 0),
    JSON.stringify(workers),
  );
});

test('a worker SIGKILLed mid-run is dropped, the others finish, and a replacement joins at the current parameters', async () => {
  const results = await run('kill', 5);
  assert.is(results[3].signal, 'SIGKILL');
  expectAllOk([results[0], results[1], results[2], results[4]]);
  const server = reportOf(results[0]).server!;
  assert.ok(
    server.dropped.some((d) => d.rank === 3 && d.reason === 'lost'),
    JSON.stringify(server),
  );
  assert.equal(server.joined.filter((r) => r === 3).length, 2, 'rank 3 joined, then its replacement');
  assert.ok(server.maxStaleness <= 2);
  for (const r of [results[1], results[2]]) {
    const w = reportOf(r).worker!;
    assert.is(w.pushes, 80);
    assert.ok(w.maxStaleness <= 2);
  }
  const joiner = reportOf(results[4]);
  assert.ok(joiner.joiner);
  assert.ok((joiner.startClock as number) > 0, 'the replacement starts at the slowest live clock, not 0');
  assert.ok((joiner.moved as number) > 0.01, 'its first pull gives the trained parameters, not its own initial ones');
  assert.is(joiner.worker!.pushes, 10);
  assert.ok(joiner.worker!.maxStaleness <= 2);
});

test('a server SIGKILLed mid-run fails every worker with ERR_PEER_LOST naming it, then and on the next call', async () => {
  const results = await run('serverdie', 4);
  assert.is(results[1].signal, 'SIGKILL');
  assert.is(results[0].code, 0, results[0].out);
  for (const r of results.slice(2)) {
    assert.is(r.code, 3, r.out);
    const rep = reportOf(r);
    assert.is(rep.code, 'ERR_PEER_LOST');
    assert.match(rep.message as string, new RegExp(`^ParameterServer\\.(pull|push) on rank ${r.rank}: parameter server rank 1 was lost`));
    assert.is(rep.again, 'ERR_PEER_LOST');
    assert.ok((rep.ms as number) < 15_000);
  }
});

test('misfits: another model (ERR_SHAPE), another staleness (ERR_ARG); a silent worker is dropped after timeoutMs and the others go on', async () => {
  const results = await run('misfit', 3);
  expectAllOk(results);
  const [server, worker, misfit] = results.map(reportOf);
  const errors = misfit.errors as Array<{ code: string; message: string }>;
  assert.is(errors.length, 3, JSON.stringify(errors));
  assert.is(errors[0].code, 'ERR_SHAPE');
  assert.match(
    errors[0].message,
    /parameter server rank 0: the worker's model gives this server 4 tensors .* of 292 bytes, it holds 4 tensors .* of 212 bytes/,
  );
  assert.is(errors[1].code, 'ERR_ARG');
  assert.match(errors[1].message, /parameter server rank 0 runs with staleness 0, this worker was given 1/);
  assert.is(errors[2].code, 'ERR_TIMEOUT');
  assert.match(
    errors[2].message,
    /^ParameterServer\.push on rank 2: parameter server rank 0: worker rank 2 was silent for 5000 ms and is dropped/,
  );
  assert.ok(
    server.server!.dropped.some((d) => d.rank === 2 && d.reason === 'timed out'),
    JSON.stringify(server.server),
  );
  assert.is(worker.worker!.pushes, 5);
  assert.match(
    worker.again as string,
    /^ERR_ARG: ParameterServer\.push on rank 1: the parameters were read when the slowest worker was at clock 4, 1 behind this worker.s clock 5 \(staleness bound 0\); pull\(\) first/,
  );
});

test('a rank that connects again supersedes its old connection, which fails with ERR_PEER_LOST; the new one goes on from the current clock', async () => {
  const results = await run('twice', 3);
  expectAllOk(results);
  const [server, first, second] = results.map(reportOf);
  assert.match(
    first.error as string,
    /^ERR_PEER_LOST: ParameterServer\.(pull|push) on rank 1: parameter server rank 0: worker rank 1 connected again; this connection is superseded/,
  );
  assert.ok(second.second);
  assert.ok((second.startClock as number) >= 2);
  assert.is(second.worker!.pushes, 3);
  assert.equal(server.server!.joined, [1, 1]);
  assert.equal(server.server!.dropped, [{ rank: 1, reason: 'superseded' }]);
});

test('fail-stop: a worker whose loss fails pushes nothing (its push rejects with the error); the next batch trains as if the bad one were skipped', async () => {
  const results = await runRanks('parameter_server.ts', 2, { env: { MODE: 'failstop' } }).done;
  expectAllOk(results);
  const w = JSON.parse(results[1].out.split('\n').find((l) => l.startsWith('{"ps"')) ?? 'null');
  assert.ok(w, results[1].out);
  assert.equal(w.errors, ['2:ERR_INDEX']);
  assert.equal(w.good, [0, 1, 3]);
  assert.is(w.clock, 3);
  assert.ok(w.gap < 1e-6, `gap ${w.gap} from single-process SGD on batches 0, 1 and 3`);
});

test.run();
