/**
 * Cascaded f32 sums (cpp/cpu/reduce.cc): sums over 1e5 rows — sum(0), sum(1), mean, a linear
 * layer's bias gradient, var/std — within 1e-6 of an f64 reference relative to Σ|x| (a serial f32
 * accumulator is off by ~1e-5 there; PyTorch's cascade by ~1e-7), and the same bits under every
 * instruction set this CPU has.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { values } from '../helpers/values';
import { runTsx } from '../helpers/rerun';

const BOUND = 1e-6;
fl.manualSeed(38);

/** Column sums in f64 of a row-major [rows, cols] array, and the column sums of |x|. */
function columnSums(xs: ArrayLike<number>, rows: number, cols: number): { sums: Float64Array; abs: Float64Array } {
  const sums = new Float64Array(cols),
    abs = new Float64Array(cols);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) {
      const v = xs[r * cols + c];
      sums[c] += v;
      abs[c] += Math.abs(v);
    }
  return { sums, abs };
}

/** The largest |got − ref| / scale over the outputs. */
function worst(got: number[], ref: ArrayLike<number>, scale: ArrayLike<number>): number {
  let w = 0;
  for (let i = 0; i < ref.length; i++) w = Math.max(w, Math.abs(got[i] - ref[i]) / scale[i]);
  return w;
}

function bounded(what: string, err: number): void {
  assert.ok(err < BOUND, `${what}: relative error ${err.toExponential(2)} ≥ ${BOUND}`);
}

const ROWS = 100_000,
  COLS = 64;
const x = fl.rand([ROWS, COLS]);
const xs = x.dataSync() as Float32Array;
const ref = columnSums(xs, ROWS, COLS);

test('f32 sum(0) over 1e5 rows is within 1e-6 of f64', () => {
  bounded('sum(0)', worst(values(x.sum(0)), ref.sums, ref.abs));
});

test('f32 mean(0) over 1e5 rows is within 1e-6 of f64', () => {
  const m = Array.from(ref.sums, (s) => s / ROWS);
  bounded(
    'mean(0)',
    worst(
      values(x.mean(0)),
      m,
      Array.from(ref.abs, (a) => a / ROWS),
    ),
  );
});

test('f32 sum(1) over rows of 1e6 and sum() of 1e7 elements are within 1e-6 of f64', () => {
  const len = 1_000_000,
    rows = 4;
  const y = fl.rand([rows, len]);
  const ys = y.dataSync() as Float32Array;
  const sums = new Float64Array(rows);
  for (let r = 0; r < rows; r++) for (let i = 0; i < len; i++) sums[r] += ys[r * len + i];
  bounded('sum(1)', worst(values(y.sum(1)), sums, sums));
  bounded(
    'mean(1)',
    worst(
      values(y.mean(1)),
      Array.from(sums, (s) => s / len),
      Array.from(sums, (s) => s / len),
    ),
  );
  const z = fl.rand([10_000_000]);
  let total = 0;
  for (const v of z.dataSync() as Float32Array) total += v;
  bounded('sum()', Math.abs(values(z.sum())[0] - total) / total);
});

test("a linear layer's bias gradient over 1e5 rows is within 1e-6 of f64", () => {
  const lin = new fl.nn.Linear(3, COLS);
  const input = fl.randn([ROWS, 3]);
  // backward(G): the bias gradient is G's column sums.
  lin.forward(input).backward(x);
  const gb = lin.bias?.grad;
  assert.ok(gb);
  bounded('bias.grad', worst(values(gb), ref.sums, ref.abs));
});

test('f32 var(0) and std(0) over 1e5 rows are within 1e-6 of f64', () => {
  const mean = Array.from(ref.sums, (s) => s / ROWS);
  const sq = new Float64Array(COLS);
  for (let r = 0; r < ROWS; r++)
    for (let c = 0; c < COLS; c++) {
      const d = xs[r * COLS + c] - mean[c];
      sq[c] += d * d;
    }
  const v = Array.from(sq, (s) => s / (ROWS - 1));
  bounded('var(0)', worst(values(x.var(0)), v, v));
  const sd = v.map(Math.sqrt);
  bounded('std(0)', worst(values(x.std(0)), sd, sd));
});

test('f64 and bf16 sums over 1e5 rows (the typed path) match f64', () => {
  const x64 = x.to('f64');
  bounded('f64 sum(0)', worst(values(x64.sum(0)), ref.sums, ref.abs));
  // bf16 rounds its inputs (8 bits) but must not add a serial f32 accumulator's error on top.
  const xb = x.to('bf16');
  const rb = columnSums(values(xb), ROWS, COLS);
  const got = values(fl.sum(xb.reshape([ROWS / 4, 4, COLS]), [0, 1]).to('f32'));
  const err = worst(got, rb.sums, rb.abs);
  assert.ok(err < 4e-3, `bf16 sum: relative error ${err.toExponential(2)} (one bf16 rounding is 3.9e-3)`);
});

// The cascade's order depends only on the sizes: every ISA's copy of the loop gives the same bits.
const digest = (): string => {
  fl.manualSeed(5);
  const a = fl.randn([3000, 37]);
  const parts = [a.sum(0), a.sum(1), a.mean(0), fl.randn([100_003]).sum(), a.var(0)];
  return parts.map((p) => Buffer.from((p.dataSync() as Float32Array).buffer).toString('hex')).join(':');
};

if (process.env.FLOCKML_REDUCE_DIGEST) {
  console.log(`digest ${digest()}`);
} else {
  const ORDER = ['generic', 'avx2', 'avx512'];
  const chosen = fl.buildInfo().cpuIsa;
  for (const isa of ORDER.slice(0, ORDER.indexOf(chosen))) {
    test(`FLOCKML_CPU_ISA=${isa} sums to the same bits as ${chosen}`, () => {
      const r = runTsx({ FLOCKML_CPU_ISA: isa, FLOCKML_REDUCE_DIGEST: '1' }, ['test/ops/reduce_pairwise.test.ts']);
      const theirs = /digest (\S+)/.exec(`${r.stdout}`)?.[1];
      assert.ok(theirs, `${isa}: ${r.stdout}${r.stderr}`.slice(-2000));
      assert.is(theirs, digest());
    });
  }
  test.run();
}
