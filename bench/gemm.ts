/**
 * SGEMM throughput on the CPU, side by side with numpy (bench/anchors/numpy_gemm.py, 2 threads) in
 * the same command: flockml and numpy alternate round by round, and each line gives both medians
 * over the rounds and their ratio. A size N is C = A·B for square N×N f32 matrices; MxKxN is a
 * linear layer's product x·Wᵀ (fl.nn.functional.linear), x [M, K] and W [N, K] (1x384x1152: a decoding step's batch-1 QKV
 * projection, the weight read from cache round after round).
 *   npm run bench -- gemm [N | MxKxN ...] [--rounds R] [--no-anchor] [--openblas DIR]
 * One JSON line per size: {"bench":"gemm","n" or "shape","isa","ms","gflops","anchor_ms","anchor_gflops",
 * "ratio" (flockml's GFLOP/s over numpy's; > 1 is faster), "blas" (the library numpy loaded)}.
 * FLOCKML_CPU_ISA=avx2 measures the AVX2 path on an AVX-512 machine.
 */
import { join } from 'node:path';
import * as fl from '../lib/index';
import { Anchor, median } from './anchors/serve';
import { flag } from './shared/args';

const argv = process.argv.slice(2);
const rounds = Number(flag('rounds') ?? 5);
const sizes = argv.filter((a, i) => /^\d+(x\d+x\d+)?$/.test(a) && !argv[i - 1]?.startsWith('--'));

/** [M, K, N] of a size argument: N alone is the square N×N·N×N. */
function dims(size: string): [number, number, number] {
  const [m, k, n] = size.split('x').map(Number);
  return k === undefined ? [m, m, m] : [m, k, n];
}

async function main(): Promise<void> {
  let anchor: Anchor | null = null;
  let blas: unknown;
  if (!argv.includes('--no-anchor')) {
    const started = await Anchor.start(join(__dirname, 'anchors', 'numpy_gemm.py'));
    if ('skipped' in started) console.log(JSON.stringify({ bench: 'gemm', impl: 'numpy', skipped: started.skipped }));
    else {
      anchor = started.anchor;
      blas = started.ready.blas;
    }
  }
  for (const size of sizes.length ? sizes : ['256', '512', '1024', '2048']) {
    const [m, k, n] = dims(size),
      linear = size.includes('x');
    const a = fl.randn([m, k]),
      b = linear ? fl.randn([n, k]) : fl.randn([k, n]);
    const run = async (iters: number) => {
      const t0 = performance.now();
      for (let i = 0; i < iters; i++)
        fl.tidy(() => {
          // The linear form hands the GEMM W with its transposed flag, as the models' layers do.
          if (linear) fl.nn.functional.linear(a, b);
          else a.matmul(b);
        });
      await fl.sync();
      return (performance.now() - t0) / iters;
    };
    const flops = 2 * m * k * n;
    const iters = Math.max(3, Math.round(1e10 / flops)); // ~0.1 s rounds
    await run(2); // warm-up: packing buffers, thread pool, page faults
    if (anchor) await anchor.request(`${size} 2`);
    const ours: number[] = [],
      theirs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      ours.push(await run(iters));
      const line = anchor && (await anchor.request(`${size} ${iters}`));
      if (anchor && !line) {
        console.log(JSON.stringify({ bench: 'gemm', impl: 'numpy', skipped: anchor.lastError() }));
        anchor = null;
      }
      if (line) theirs.push(Number(line.ms));
    }
    const gflops = (ms: number) => +(flops / (ms * 1e6)).toFixed(2);
    const ms = median(ours),
      anchorMs = theirs.length ? median(theirs) : undefined;
    console.log(
      JSON.stringify({
        bench: 'gemm',
        device: 'cpu',
        dtype: 'f32',
        ...(linear ? { shape: size } : { n }),
        threads: fl.getNumThreads(),
        isa: fl.buildInfo().sgemm,
        rounds,
        ms: +ms.toFixed(3),
        gflops: gflops(ms),
        ...(anchorMs === undefined
          ? {}
          : {
              anchor: 'numpy',
              blas,
              anchor_ms: +anchorMs.toFixed(3),
              anchor_gflops: gflops(anchorMs),
              ratio: +(anchorMs / ms).toFixed(3),
            }),
      }),
    );
    a.dispose();
    b.dispose();
  }
  anchor?.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
