/**
 * The CPU instruction-set paths: GEMM shapes that cross every edge of each micro-kernel's tiles and
 * cache blocks, checked against an f64 reference; then (in the parent run only) this file and the
 * GEMM, convolution, pooling, element-wise, optimizer, master-weight and training tests again in
 * child processes under every narrower ISA this CPU supports (FLOCKML_CPU_ISA), so each path meets
 * the same references; and the error for an ISA that cannot be used.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, refMatmul } from '../helpers/reference';
import { assertFilePasses, runTsx } from '../helpers/rerun';
import { values } from '../helpers/values';

const ORDER = ['generic', 'avx2', 'avx512'];
const info = fl.buildInfo();
const forced = process.env.FLOCKML_CPU_ISA;

test('buildInfo reports the chosen and the detected ISA, and the GEMM follows the chosen one', () => {
  assert.ok(ORDER.includes(info.cpuIsa), info.cpuIsa);
  assert.ok(ORDER.includes(info.cpuIsaDetected), info.cpuIsaDetected);
  assert.ok(ORDER.indexOf(info.cpuIsa) <= ORDER.indexOf(info.cpuIsaDetected));
  assert.is(info.cpuIsa, forced || info.cpuIsaDetected);
  assert.is(info.sgemm, info.cpuIsa);
});

fl.manualSeed(11);

/** op(A)·op(B) for [m,k]·[k,n] in all four transpositions (as views, so the GEMM gets the flags) against f64. */
function allTranspositions(m: number, n: number, k: number): void {
  for (const [ta, tb] of [
    [false, false],
    [false, true],
    [true, false],
    [true, true],
  ]) {
    const a = fl.randn(ta ? [k, m] : [m, k]),
      b = fl.randn(tb ? [n, k] : [k, n]);
    const c = (ta ? a.T : a).matmul(tb ? b.T : b);
    assert.equal(c.shape, [m, n]);
    close(values(c), refMatmul(values(a), values(b), m, n, k, ta, tb), 2e-4 * Math.sqrt(k + 1), 1e-4, `C ta=${ta} tb=${tb}`);
  }
}

// Tiles are 6×16 (avx2, generic) and 8×32 (avx512); K slices of at most 256, M blocks of 96 or 128.
for (const [m, n, k] of [
  [8, 32, 1],
  [9, 33, 257],
  [6, 16, 513],
  [129, 95, 64],
  [257, 129, 520],
  [100, 10, 784],
  [31, 300, 17],
]) {
  // op(A) = A and op(B) = Bᵀ pack through 8×8 register transposes (gemm_pack.cc): ragged rows,
  // columns and K tails included.
  test(`sgemm ${info.cpuIsa} ${m}x${k}·${k}x${n}, all four transpositions, matches f64`, () => allTranspositions(m, n, k));
}

// Products of at most 2^15 multiply-adds with n ≤ 256 skip packing (4-row blocks of one vector of
// columns, masked at the right edge): every row and column remainder, n of 1, the size limits.
for (const [m, n, k] of [
  [16, 16, 16],
  [1, 1, 1],
  [5, 17, 3],
  [4, 256, 32],
  [3, 7, 1500],
  [13, 250, 10],
  [33, 1, 7],
  [7, 9, 0],
]) {
  test(`small sgemm ${info.cpuIsa} ${m}x${k}·${k}x${n}, all four transpositions, matches f64`, () => allTranspositions(m, n, k));
}

test(`small batched sgemm ${info.cpuIsa}: 12 heads of [16,24]·[24,16] match f64`, () => {
  const a = fl.randn([12, 16, 24]),
    b = fl.randn([12, 24, 16]);
  const c = values(a.matmul(b)),
    av = values(a),
    bv = values(b);
  for (let h = 0; h < 12; h++) {
    const ref = refMatmul(av.slice(h * 384, (h + 1) * 384), bv.slice(h * 384, (h + 1) * 384), 16, 16, 24, false, false);
    close(c.slice(h * 256, (h + 1) * 256), ref, 2e-4 * Math.sqrt(24), 1e-4, `head ${h}`);
  }
});

// A C of at most 4 rows skips packing where AVX2 is there (cpp/cpu/gemv.cc): op(B) = Bᵀ four rows at
// a time with K tails under 8, between 8 and 16 and over 16, op(B) = B sixteen columns at a time
// with ragged right edges, and products large enough to be split over the pool (a decoding step's
// [1, 384] · [384, 1152], a vocabulary head's long N).
for (const [m, n, k] of [
  [1, 1152, 384],
  [1, 1, 2049],
  [2, 37, 23],
  [3, 515, 700],
  [4, 9, 5],
  [4, 2000, 129],
  [1, 50, 1],
  [2, 20000, 12],
]) {
  test(`few-row sgemm ${info.cpuIsa} ${m}x${k}·${k}x${n}, all four transpositions, matches f64`, () => allTranspositions(m, n, k));
}

test(`few-row sgemm ${info.cpuIsa} adds into a gradient: a 3-output linear layer's weight gradient over two backward passes`, () => {
  const x = fl.randn([300, 70]),
    w = fl.randn([3, 70], { requiresGrad: true });
  for (let pass = 0; pass < 2; pass++) x.matmul(w.T).sum().backward();
  // d/dw of sum(x·wᵀ) is 1ᵀx for each output row; twice over.
  const xs = values(x),
    want: number[] = [];
  for (let o = 0; o < 3; o++)
    for (let p = 0; p < 70; p++) {
      let s = 0;
      for (let i = 0; i < 300; i++) s += xs[i * 70 + p];
      want.push(2 * s);
    }
  close(values(w.grad as fl.Tensor), want, 2e-4 * Math.sqrt(300), 1e-4, 'w.grad');
});

const run = runTsx;

if (!forced) {
  const files = [
    'test/ops/cpu_isa.test.ts',
    'test/ops/linalg.test.ts',
    'test/nn/conv.test.ts',
    'test/optim/optimizers.test.ts',
    'test/nn/training.test.ts',
    'test/nn/conv_paths.test.ts',
    'test/nn/pool_f32.test.ts',
    'test/ops/elementwise.test.ts',
    'test/amp/master_weights.test.ts',
    'test/ops/vector_loops.test.ts',
    'test/ops/gelu_vec.test.ts',
  ];
  for (const isa of ORDER.slice(0, ORDER.indexOf(info.cpuIsaDetected))) {
    for (const file of files) {
      test(`FLOCKML_CPU_ISA=${isa}: ${file} passes`, () => assertFilePasses(file, { FLOCKML_CPU_ISA: isa }));
    }
  }

  test('an unknown FLOCKML_CPU_ISA is refused with ERR_ARG naming the variable', () => {
    const script = `const fl = require('./lib/index');
try { fl.randn([4, 4]).matmul(fl.randn([4, 4])).toArray(); console.log('no error'); }
catch (e) { console.log(JSON.stringify({ code: e.code, name: e.name, message: e.message })); }`;
    const r = run({ FLOCKML_CPU_ISA: 'sse9' }, ['-e', script]);
    const line = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');
    assert.is(line.code, 'ERR_ARG', r.stdout + r.stderr);
    assert.match(line.message, /FLOCKML_CPU_ISA=sse9 is not an instruction set/);
  });

  // A forced ISA wider than the CPU's: only checkable on a CPU without AVX-512.
  if (info.cpuIsaDetected !== 'avx512')
    test('FLOCKML_CPU_ISA wider than the CPU is refused', () => {
      const r = run({ FLOCKML_CPU_ISA: 'avx512' }, ['-e', `require('./lib/index').buildInfo()`]);
      assert.ok(r.status !== 0);
      assert.match(r.stderr, /FLOCKML_CPU_ISA=avx512 but this CPU supports at most/);
    });
}

test.run();
