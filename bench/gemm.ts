/**
 * SGEMM throughput on the CPU: C = A·B for square n×n f32 matrices.
 * Prints one JSON line per size: {"bench":"gemm","device":"cpu","dtype":"f32","n":…,"gflops":…}.
 * Anchor: bench/anchors/numpy_gemm.py (numpy + OpenBLAS) prints the same shape.
 */
import * as fl from '../lib/index';

async function main(): Promise<void> {
  const sizes = process.argv
    .slice(2)
    .map(Number)
    .filter((n) => n > 0);
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
    await run(2); // warm-up: packing buffers, thread pool, page faults
    const iters = Math.max(3, Math.round(2e9 / (2 * n ** 3)));
    const ms = Math.min(await run(iters), await run(iters));
    const gflops = (2 * n ** 3) / (ms * 1e6);
    console.log(
      JSON.stringify({
        bench: 'gemm',
        device: 'cpu',
        dtype: 'f32',
        n,
        threads: fl.getNumThreads(),
        isa: fl.buildInfo().sgemm,
        ms: +ms.toFixed(3),
        gflops: +gflops.toFixed(2),
      }),
    );
    a.dispose();
    b.dispose();
  }
}

void main();
