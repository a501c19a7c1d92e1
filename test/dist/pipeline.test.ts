/**
 * DistributedPipeline on real ranks (test/dist/workers/pipeline.ts): after 10 SGD steps every
 * stage's parameters equal single-process training of the whole model on the whole batch, for
 * GPipe and 1F1B on 2 and 3 ranks and for 2 stages x 2 data-parallel replicas on 4, and inference
 * through the trained pipeline equals the whole model's; multi-megabyte messages work; a declared
 * input shape its neighbour does not send and a stage whose process dies fail the others with an
 * error instead of a hang. The equivalence tests also run on nccl with a GPU per rank (simulated under
 * test:sim).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, type RankResult, runRanks } from './harness';
import { NCCL_ENV, ncclRuns, ringRuns } from './nccl_ranks';

interface Line {
  rank: number;
  phase: string;
  ok?: boolean;
  code?: string;
  message?: string;
  ms?: number;
}

function lines(results: RankResult[]): Line[] {
  return results.flatMap((r) =>
    r.out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line),
  );
}

function okPhases(results: RankResult[], phases: string[]): void {
  expectAllOk(results);
  const got = lines(results);
  for (const r of results)
    for (const phase of phases)
      assert.ok(
        got.some((l) => l.rank === r.rank && l.phase === phase && l.ok),
        `rank ${r.rank} did not report phase ${phase}:\n${r.out}`,
      );
}

// The equivalence tests: on the ring backend (CPU), and on nccl with a GPU per rank where there are enough.
for (const [backend, env] of [
  ['ring', {}],
  ['nccl', NCCL_ENV],
] as const) {
  const runs = (n: number) => (backend === 'ring' ? ringRuns : ncclRuns(`pipeline ${n} ranks`, n));
  if (runs(2))
    test(`${backend}, 2 ranks, GPipe and 1F1B, 4 uneven micro-batches: 10 steps equal single-process training`, async () => {
      okPhases(await runRanks('pipeline.ts', 2, { args: ['equal', 'gpipe', '1f1b'], env }).done, ['gpipe', '1f1b']);
    });

  if (runs(3))
    test(`${backend}, 3 ranks, 1F1B and GPipe: 10 steps equal single-process training`, async () => {
      okPhases(await runRanks('pipeline.ts', 3, { args: ['equal', '1f1b', 'gpipe'], env }).done, ['1f1b', 'gpipe']);
    });

  if (runs(4))
    test(`${backend}, 4 ranks = 2 stages x 2 DDP replicas: 10 steps equal single-process training`, async () => {
      okPhases(await runRanks('pipeline.ts', 4, { args: ['dp'], env }).done, ['dp']);
    });
}

// The rest on the ring backend only (the plain suite).
if (ringRuns) {
  test('8.4 MB activations and gradients per message: 1F1B gives the losses of one process', async () => {
    okPhases(await runRanks('pipeline.ts', 2, { args: ['large'] }).done, ['large 1f1b']);
  });

  test('a declared input shape the previous stage does not send, or another micro-batch count: a coded error there, the other stage fails at once', async () => {
    const results = await runRanks('pipeline.ts', 2, { args: ['mismatch'] }).done;
    expectAllOk(results);
    const [first, second] = [0, 1].map((r) => lines(results).find((l) => l.rank === r && l.phase === 'mismatch')!);
    assert.is(second.code, 'ERR_SHAPE', second.message);
    assert.match(second.message!, /stage 1 declares its input \[\*, 5\], but stage 0 sent micro-batch 0 as \[7, 16\] f64/);
    assert.is(first.code, 'ERR_PEER_LOST', first.message);
    assert.ok(first.ms! < 10_000, `stage 0 took ${first.ms} ms to fail`);
    // Stages given different micro-batch counts: the first activation's header says so.
    const [a, b] = [0, 1].map((r) => lines(results).find((l) => l.rank === r && l.phase === 'mismatch-micro')!);
    assert.is(b.code, 'ERR_COLLECTIVE_MISMATCH', b.message);
    assert.match(b.message!, /stage 1 runs step\(\) with 1f1b and 2 micro-batches .* stage 0 runs step\(\) with 1f1b and 4 micro-batches/);
    assert.is(a.code, 'ERR_PEER_LOST', a.message);
  });

  test('a stage whose process dies mid-step fails the other with ERR_PEER_LOST, not a hang', async () => {
    const results = await runRanks('pipeline.ts', 2, { args: ['dead'], timeoutMs: 40_000 }).done;
    assert.is(results[1].code, 7, results[1].out);
    assert.is(results[0].code, 0, results[0].out);
    const first = lines(results).find((l) => l.rank === 0 && l.phase === 'dead')!;
    assert.is(first.code, 'ERR_PEER_LOST', first.message);
    assert.ok(first.ms! < 10_000, `stage 0 took ${first.ms} ms to fail`);
  });

  for (const [n, schedule, failStage] of [
    [2, 'gpipe', 0],
    [3, '1f1b', 1],
  ] as const) {
    test(`fail-stop, ${n} stages, ${schedule}: stage ${failStage}'s allocation fails in step 2; every stage's step rejects and none applies it`, async () => {
      const results = await runRanks('pipeline.ts', n, {
        args: ['failstop', schedule],
        env: { FAIL_STAGE: String(failStage) },
        timeoutMs: 60_000,
      }).done;
      expectAllOk(results);
      for (const r of results) {
        const l = JSON.parse(r.out.split('\n').find((s) => s.includes('"failstop"')) ?? 'null') as {
          errors: { step: number; code?: string; message: string }[];
          unchanged: boolean;
        } | null;
        assert.ok(l, r.out);
        assert.equal(
          l.errors.map((e) => e.step),
          [2],
          JSON.stringify(l.errors),
        );
        const code = l.errors[0].code ?? '';
        if (r.rank === failStage) assert.is(code, 'ERR_OOM', l.errors[0].message);
        else assert.ok(['ERR_PEER_FAILED', 'ERR_PEER_LOST', 'ERR_OOM'].includes(code), `${code}: ${l.errors[0].message}`);
        assert.ok(l.unchanged, `stage ${r.rank} applied the failed step`);
      }
    });
  }
}

test.run();
