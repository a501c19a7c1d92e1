/**
 * The f32 loops compiled once per instruction set (cpp/cpu/softmax.cc rows, cpp/cpu/reduce.cc sum
 * and mean; exp from cpp/cpu/vec_math.h) against f64 references, on lengths around the 16-lane
 * blocks, large logits, -inf (masked) entries, rows of -inf and NaN. test/ops/cpu_isa.test.ts
 * reruns this file under each narrower FLOCKML_CPU_ISA; here the parent also checks that every
 * instruction set gives the same bits.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { values } from '../helpers/values';
import { close } from '../helpers/reference';

const F = fl.nn.functional;

function softmaxRef(x: number[], rows: number, dim: number, log: boolean): number[] {
  const out: number[] = [];
  for (let r = 0; r < rows; r++) {
    const row = x.slice(r * dim, (r + 1) * dim);
    const mx = Math.max(...row);
    const m = mx === -Infinity ? 0 : mx;
    const sum = row.reduce((s, v) => s + Math.exp(v - m), 0);
    for (const v of row) out.push(log ? v - m - Math.log(sum) : Math.exp(v - m) / sum);
  }
  return out;
}

// f32 inputs: the references see exactly the values the kernel reads.
for (const dim of [1, 15, 16, 17, 33, 100, 1000, 4099]) {
  test(`softmax and logSoftmax f32 rows of ${dim} match f64`, () => {
    const x = fl.randn([3, dim]).mul(8);
    const xs = values(x);
    close(values(F.softmax(x, -1)), softmaxRef(xs, 3, dim, false), 1e-5, 1e-7, 'softmax');
    close(values(F.logSoftmax(x, -1)), softmaxRef(xs, 3, dim, true), 1e-5, 1e-5, 'logSoftmax');
  });
}

test('softmax f32: logits near the overflow range, masked entries, a row of -inf, NaN', () => {
  const dim = 37;
  const v = Array.from({ length: 4 * dim }, (_, i) => ((i * 7919) % 97) - 48);
  for (let i = 0; i < dim; i++) v[i] = 80 + (i % 5); // e^85 would overflow f32 without the max subtracted
  for (let i = dim; i < 2 * dim; i += 3) v[i] = Number.NEGATIVE_INFINITY; // masked
  for (let i = 2 * dim; i < 3 * dim; i++) v[i] = Number.NEGATIVE_INFINITY; // all masked: NaN, as torch
  v[3 * dim + 5] = Number.NaN; // a NaN makes its row NaN
  const x = fl.tensor(v, { dtype: 'f32' }).reshape([4, dim]);
  const got = values(F.softmax(x, 1));
  close(got.slice(0, 2 * dim), softmaxRef(v.slice(0, 2 * dim), 2, dim, false), 1e-5, 1e-7, 'finite rows');
  for (let i = dim; i < 2 * dim; i += 3) assert.is(got[i], 0, `masked entry ${i}`);
  assert.ok(got.slice(2 * dim).every(Number.isNaN), 'rows of -inf and with NaN are NaN');
  const lg = values(F.logSoftmax(x, 1));
  close(lg.slice(0, dim), softmaxRef(v.slice(0, dim), 1, dim, true), 1e-5, 1e-5, 'logSoftmax of large logits');
  assert.is(lg[dim], Number.NEGATIVE_INFINITY, 'logSoftmax of a masked entry is -inf');
});

test('exp f32 underflows gradually: softmax of a row spanning 100 in logits', () => {
  const v = [0, -87.5, -95, -103, -110, -20];
  const got = values(F.softmax(fl.tensor(v, { dtype: 'f32' }), 0));
  const ref = softmaxRef(v, 1, v.length, false);
  // subnormal results are computed (not flushed): within one subnormal step of f64's, rounded to f32
  for (let i = 0; i < v.length; i++)
    assert.ok(Math.abs(got[i] - Math.fround(ref[i])) <= 1.5e-45 + 1e-6 * ref[i], `${i}: ${got[i]} vs ${ref[i]}`);
  assert.ok(got[3] > 0, 'e^-103 is a positive subnormal');
  assert.is(got[4], 0, 'e^-110 underflows to 0');
});

for (const [outer, red, inner] of [
  [1, 1, 1],
  [5, 17, 1],
  [3, 1000, 1],
  [2, 4099, 1],
  [4, 9, 3],
  [2, 33, 65],
  [3, 200, 130],
] as const) {
  test(`sum and mean f32 over [${outer}, ${red}, ${inner}] match f64`, () => {
    const x = fl.randn([outer, red, inner]);
    const xs = values(x);
    const ref: number[] = [];
    for (let o = 0; o < outer; o++)
      for (let i = 0; i < inner; i++) {
        let s = 0;
        for (let r = 0; r < red; r++) s += xs[(o * red + r) * inner + i];
        ref.push(s);
      }
    const tol = 2e-6 * Math.sqrt(red);
    close(values(x.sum(1)), ref, tol, tol, 'sum');
    close(
      values(x.mean(1)),
      ref.map((s) => s / red),
      tol,
      tol,
      'mean',
    );
  });
}

/** sha256 of the bits of a softmax, a logSoftmax, a row sum, a column sum and a mean. */
function digest(): string {
  fl.manualSeed(11);
  const a = fl.randn([7, 1031]).mul(5),
    b = fl.randn([6, 301, 70]);
  const h = createHash('sha256');
  for (const t of [F.softmax(a, 1), F.logSoftmax(a, 1), a.sum(1), b.sum(1), b.mean(2)])
    h.update(new Uint8Array((t.dataSync() as Float32Array).buffer));
  return h.digest('hex');
}

if (!process.env.FLOCKML_CPU_ISA) {
  test('every instruction set gives the same bits', () => {
    const root = join(__dirname, '..', '..');
    const tsx = join(root, 'node_modules', '.bin', 'tsx');
    const mine = digest();
    const isas = ['generic', 'avx2', 'avx512'];
    const detected = fl.buildInfo().cpuIsaDetected as string;
    for (const isa of isas.slice(0, isas.indexOf(detected) + 1)) {
      const script = `const { digest } = require(${JSON.stringify(__filename)}); console.log(digest());`;
      const r = spawnSync(tsx, ['-e', script], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, FLOCKML_CPU_ISA: isa, FLOCKML_VECTOR_LOOPS_DIGEST: '1' },
      });
      assert.is(r.stdout.trim().split('\n').pop(), mine, `${isa}: ${r.stderr.slice(-2000)}`);
    }
  });
}

export { digest };

if (!process.env.FLOCKML_VECTOR_LOOPS_DIGEST) test.run();
