/**
 * Tensor-parallel layers on 2 and 4 real ranks against the unsplit layers, forward and backward:
 * on the ring backend (the plain suite), and on nccl (one GPU per rank) where the machine has 2 or more
 * (simulated GPUs under test:sim).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, runRanks } from './harness';
import { NCCL_ENV, ncclRuns, ringRuns } from './nccl_ranks';

const WHAT =
  'column/row-parallel linear, vocab-parallel embedding and cross-entropy, parallel attention equal the unsplit layers (outputs, input and weight gradients) through synchronous forward and loss.backward(), alone and inside nn.Sequential; bad sizes and indices fail with codes';

async function layers(n: number, env: NodeJS.ProcessEnv = {}) {
  const results = await runRanks('tensor_parallel_layers.ts', n, { env }).done;
  expectAllOk(results);
  for (const r of results) assert.match(r.out, /81 checks passed/);
}

if (ringRuns) for (const n of [2, 4]) test(`ring, ${n} ranks: ${WHAT}`, () => layers(n));

if (ringRuns)
  test('a peer that leaves fails the ordered collectives of forward and loss.backward() with a code, no unhandled rejection', async () => {
    const results = await runRanks('tensor_parallel_die.ts', 2, { env: { PG_TIMEOUT_MS: '3000' }, timeoutMs: 60_000 }).done;
    const r0 = results.find((r) => r.rank === 0);
    assert.ok(r0, 'rank 0 ran');
    assert.is(r0.code, 0, r0.out);
    assert.match(r0.out, /forward failed with ERR_[A-Z_]+/);
    assert.match(r0.out, /backward failed with ERR_[A-Z_]+/);
    assert.match(r0.out, /no unhandled rejections/);
  });

if (ncclRuns('tensor parallel', 4)) test(`nccl, 4 ranks on 4 GPUs: ${WHAT}`, () => layers(4, NCCL_ENV));
else if (ncclRuns('tensor parallel', 2)) test(`nccl, 2 ranks on 2 GPUs: ${WHAT}`, () => layers(2, NCCL_ENV));

test.run();
