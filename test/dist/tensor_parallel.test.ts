/** Tensor-parallel layers on 2 and 4 real ranks against the unsplit layers, forward and backward. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, runRanks } from './harness';

for (const n of [2, 4])
  test(`${n} ranks: column/row-parallel linear, vocab-parallel embedding and cross-entropy, parallel attention equal the unsplit layers (outputs, input and weight gradients); bad sizes and loss.backward() are refused with codes`, async () => {
    const results = await runRanks('tensor_parallel_layers.ts', n).done;
    expectAllOk(results);
    for (const r of results) assert.match(r.out, /48 checks passed/);
  });

test.run();
