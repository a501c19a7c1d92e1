/** Rotary embeddings: the per-row matrix of a decoding step rotates as the cos/sin tables do. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { applyRotary, applyRotaryMatrix, inverseFrequencies, rotaryMatrices, rotaryTables } from '../../lib/models/rope';

test('x·R equals x·cos + rotate_half(x)·sin for each row’s own position (llama3 scaling too)', () => {
  fl.manualSeed(2);
  const x = fl.randn([3, 4, 1, 16]);
  const positions = [[0], [7], [1000]];
  for (const rope of [{ kind: 'default' } as const, { kind: 'llama3', factor: 8, low: 1, high: 4, original: 64 } as const]) {
    const inv = inverseFrequencies(16, 10000, rope);
    const { cos, sin } = rotaryTables(positions, inv, x);
    const want = applyRotary(x, cos, sin).dataSync() as Float32Array;
    const got = applyRotaryMatrix(x, rotaryMatrices(positions, inv, x)).dataSync() as Float32Array;
    assert.equal(got.length, want.length);
    for (let i = 0; i < want.length; i++)
      assert.ok(Math.abs(got[i] - want[i]) < 1e-6, `${rope.kind} element ${i}: ${got[i]} vs ${want[i]}`);
  }
});

test.run();
