/**
 * Ranks that disagree on a collective (size, dtype, which collective, send/recv sizes) all fail
 * with ERR_COLLECTIVE_MISMATCH naming both calls, instead of corrupting later results silently.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, runRanks, type RankResult } from './harness';

interface Report {
  failed: boolean;
  code?: string;
  message?: string;
  ms?: number;
}

function report(r: RankResult): Report {
  const line = r.out.split('\n').find((l) => l.startsWith('{"failed"'));
  if (!line) throw new Error(`rank ${r.rank} printed no report (exit ${r.code ?? r.signal}):\n${r.out}`);
  return JSON.parse(line);
}

/**
 * `message` is `prefix: both`, said first-hand or (when the other rank's report arrived before this
 * rank read the other's header) relayed from the rank that saw it.
 */
function assertBoth(message: string | undefined, prefix: string, both: string): void {
  const relayed = (message ?? '').replace(/ \(reported by rank \d+\)$/, '');
  assert.is(relayed, `${prefix}: ${both}`, message);
}

async function mismatch(mode: string, n: number, transport = 'auto'): Promise<Report[]> {
  const results = await runRanks('mismatch.ts', n, { env: { MODE: mode, FLOCKML_TRANSPORT: transport }, timeoutMs: 60_000 }).done;
  return results.map((r) => {
    const rep = report(r);
    assert.is(r.code, 3, `rank ${r.rank}: ${r.out}`);
    assert.ok(rep.failed);
    assert.is(rep.code, 'ERR_COLLECTIVE_MISMATCH', `rank ${r.rank}: ${rep.message}`);
    assert.ok(rep.ms! < 10_000, `rank ${r.rank} took ${rep.ms} ms`);
    // Later work on the group fails at once with the same cause.
    assert.match(r.out, /"again":"ERR_COLLECTIVE_MISMATCH"/, r.out);
    return rep;
  });
}

test('allReduce of 1000 vs 1001 elements on 2 ranks: both fail naming both calls', async () => {
  const reps = await mismatch('count', 2);
  for (const [r, rep] of reps.entries())
    assertBoth(
      rep.message,
      `allreduce on rank ${r}`,
      'collective mismatch on group 0: rank 0 called allReduce(f32, 1000 elements) as collective #3, ' +
        'rank 1 called allReduce(f32, 1001 elements)',
    );
});

test('allReduce of f32 vs i32 on 2 ranks: both fail naming both dtypes', async () => {
  for (const [r, rep] of (await mismatch('dtype', 2)).entries())
    assertBoth(
      rep.message,
      `allreduce on rank ${r}`,
      'collective mismatch on group 0: rank 0 called allReduce(f32, 1000 elements) as collective #3, ' +
        'rank 1 called allReduce(i32, 1000 elements)',
    );
});

test('broadcast on one rank against allReduce on the other: both fail', async () => {
  const [r0, r1] = await mismatch('op', 2);
  const both =
    'collective mismatch on group 0: rank 0 called broadcast(f32, 1000 elements, root 0) as collective #3, rank 1 called allReduce(f32, 1000 elements)';
  assertBoth(r0.message, 'broadcast on rank 0', both);
  assertBoth(r1.message, 'allreduce on rank 1', both);
});

// Over TCP each rank checks its predecessor's call: rank 1's matches its own, yet it must fail too,
// told by the ranks that saw the mismatch. Over shared memory (the default on one host) every rank
// reads every header and sees it first-hand.
for (const transport of ['auto', 'tcp'])
  test(`a mismatch on 3 ranks fails the rank that did not see it too (transport ${transport})`, async () => {
    const reps = await mismatch('count', 3, transport);
    // Ranks 0 and 2 each saw it (rank 2 in rank 1's header, rank 0 in rank 2's); either may hear the other's report first.
    const seen = [
      /^rank 1 called allReduce\(f32, 1000 elements\) as collective #3, rank 2 called allReduce\(f32, 1001 elements\)$/,
      /^rank 0 called allReduce\(f32, 1000 elements\) as collective #3, rank 2 called allReduce\(f32, 1001 elements\)$/,
    ];
    for (const r of [0, 2]) {
      const m = /^allreduce on rank \d: collective mismatch on group 0: (.*?)(?: \(reported by rank [02]\))?$/.exec(reps[r].message!);
      assert.ok(m && seen.some((re) => re.test(m[1])), reps[r].message);
      assert.ok(reps[r].message!.startsWith(`allreduce on rank ${r}: `), reps[r].message);
    }
    assert.match(
      reps[1].message!,
      /^allreduce on rank 1: collective mismatch on group 0: rank \d called allReduce\(f32, 1000 elements\) as collective #3, rank 2 called allReduce\(f32, 1001 elements\)(?: \(reported by rank [02]\))?$/,
    );
    // Over TCP rank 1 cannot have seen it: the report must have been relayed.
    if (transport === 'tcp') assert.match(reps[1].message!, / \(reported by rank [02]\)$/);
  });

// Recursive doubling (small tensors, 4 ranks) checks each exchange partner's header: ranks 2 and 3
// see the mismatch first-hand, ranks 0 and 1 learn it on the control connections.
test('a mismatch on 4 ranks under recursive doubling fails every rank', async () => {
  const reps = await mismatch('count', 4);
  for (const [r, rep] of reps.entries())
    assert.match(
      rep.message!,
      new RegExp(
        `^allreduce on rank ${r}: collective mismatch on group 0: rank \\d called allReduce\\(f32, 1000 elements\\) as collective #3, ` +
          'rank 3 called allReduce\\(f32, 1001 elements\\)',
      ),
    );
});

test('ranks that pick different allreduce algorithms (doubling vs ring) still fail with a mismatch, not a timeout', async () => {
  const reps = await mismatch('algorithms', 4);
  for (const rep of reps) assert.match(rep.message!, /collective mismatch on group 0: rank \d called allReduce\(f32, 1\d*000 elements\)/);
});

test('send of 10 elements against recv of 11: the receiver fails naming both, the sender at its next call', async () => {
  const [r0, r1] = await mismatch('p2p', 2);
  const both =
    'send/recv mismatch on group 0: rank 0 called send(f32, 10 elements) as its message #1 to rank 1, rank 1 called recv(f32, 11 elements) from rank 0';
  assertBoth(r1.message, 'recv on rank 1', both);
  assert.match(r0.message!, /^barrier on rank 0: send\/recv mismatch on group 0: .* \(reported by rank 1\)$/);
});

test('a correct sequence of mixed collectives and send/recv still gives the right results, on 2, 3 and 4 ranks', async () => {
  expectAllOk(await runRanks('mismatch.ts', 2, { env: { MODE: 'mixed' }, timeoutMs: 60_000 }).done);
  expectAllOk(await runRanks('mismatch.ts', 3, { env: { MODE: 'mixed' }, timeoutMs: 60_000 }).done);
  expectAllOk(await runRanks('mismatch.ts', 4, { env: { MODE: 'mixed' }, timeoutMs: 60_000 }).done);
});

test.run();
