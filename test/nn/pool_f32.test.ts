/**
 * f32 max pooling 2×2 stride 2 (cpp/cpu/pool.cc: a branch-free row kernel compiled per instruction
 * set) against a plain reference: values, first-maximum indices, ties, NaN (taken, and a later NaN
 * taken over it, as PyTorch), -inf windows, rows wider than a vector with a tail, odd sizes that
 * leave the last row and column out. test/ops/cpu_isa.test.ts reruns it under each narrower ISA.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

for (const [n, c, h, w] of [
  [2, 3, 6, 8],
  [1, 2, 9, 37],
  [3, 1, 27, 70],
  [1, 1, 2, 2],
]) {
  test(`maxPool2d f32 2x2 stride 2 on ${n}x${c}x${h}x${w} matches a reference (ties, NaN, -inf)`, () => {
    fl.manualSeed(h * 100 + w);
    const vals = Float32Array.from(fl.randint(-3, 3, [n, c, h, w]).to('f32').dataSync() as Float32Array);
    vals[1] = Number.NaN;
    vals[h * w + w] = Number.NaN; // a NaN below-left in its window, after larger values
    vals[h * w + w + 1] = Number.NaN; // and a second NaN after it: the last NaN's index wins
    if (n * c > 2) for (const o of [0, 1, w, w + 1]) vals[2 * h * w + o] = Number.NEGATIVE_INFINITY;
    const x = fl.tensor(vals, { shape: [n, c, h, w] });
    const [y, idx] = fl.nn.functional.maxPool2dWithIndices(x, 2, { stride: 2 });
    const oh = Math.floor(h / 2),
      ow = Math.floor(w / 2);
    assert.equal([...y.shape], [n, c, oh, ow]);
    const got = y.dataSync() as Float32Array,
      gotIdx = Array.from(idx.dataSync() as BigInt64Array, Number);
    for (let p = 0; p < n * c; p++)
      for (let oy = 0; oy < oh; oy++)
        for (let ox = 0; ox < ow; ox++) {
          let best = Number.NaN,
            at = -1;
          for (const [i, j] of [
            [0, 0],
            [0, 1],
            [1, 0],
            [1, 1],
          ]) {
            const pos = (2 * oy + i) * w + 2 * ox + j,
              v = vals[p * h * w + pos];
            if (at < 0 || v > best || Number.isNaN(v)) {
              best = v;
              at = pos;
            }
          }
          const o = p * oh * ow + oy * ow + ox;
          assert.ok(Object.is(got[o], best), `value ${o}: ${got[o]} vs ${best}`);
          assert.is(gotIdx[o], at, `index ${o}`);
        }
  });
}

test.run();
