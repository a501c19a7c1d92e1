/**
 * SGEMM throughput on the CPU, C = A·B for square n×n f32 matrices, side by side with numpy
 * (bench/anchors/numpy_gemm.py, 2 threads) in the same command: flockml and numpy alternate round
 * by round, and each line gives both medians over the rounds and their ratio.
 *   npm run bench -- gemm [N ...] [--rounds R] [--no-anchor] [--openblas DIR]
 * One JSON line per size: {"bench":"gemm","n","isa","ms","gflops","anchor_ms","anchor_gflops",
 * "ratio" (flockml's GFLOP/s over numpy's; > 1 is faster), "blas" (the library numpy loaded)}.
 * FLOCKML_CPU_ISA=avx2 measures the AVX2 path on an AVX-512 machine.
 */
import { join } from 'node:path';
import * as fl from '../lib/index';
import { Anchor, median } from './anchors/serve';
import { flag } from './shared/args';

const argv = process.argv.slice(2);
const rounds = Number(flag('rounds') ?? 5);
const sizes = argv.filter((a, i) => /^\d+$/.test(a) && !argv[i - 1]?.startsWith('--')).map(Number);

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
  for (const n of sizes.length ? sizes : [256, 512, 1024, 2048]) {
    const a = fl.randn([n, n]),
      b = fl.randn([n, n]);
    const run = async (iters: number) => {
      const t0 = performance.now();
      for (let i = 0; i < iters; i++)
        fl.tidy(() => {
          a.matmul(b);
        });
      await fl.sync();
      return (performance.now() - t0) / iters;
    };
    const iters = Math.max(3, Math.round(1e10 / (2 * n ** 3))); // ~0.1 s rounds
    await run(2); // warm-up: packing buffers, thread pool, page faults
    if (anchor) await anchor.request(`${n} 2`);
    const ours: number[] = [],
      theirs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      ours.push(await run(iters));
      const line = anchor && (await anchor.request(`${n} ${iters}`));
      if (anchor && !line) {
        console.log(JSON.stringify({ bench: 'gemm', impl: 'numpy', skipped: anchor.lastError() }));
        anchor = null;
      }
      if (line) theirs.push(Number(line.ms));
    }
    const gflops = (ms: number) => +((2 * n ** 3) / (ms * 1e6)).toFixed(2);
    const ms = median(ours),
      anchorMs = theirs.length ? median(theirs) : undefined;
    console.log(
      JSON.stringify({
        bench: 'gemm',
        device: 'cpu',
        dtype: 'f32',
        n,
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
