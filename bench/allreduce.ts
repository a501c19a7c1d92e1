/**
 * Allreduce bandwidth of the ring backend on 2 and 4 local ranks, 4 KB .. 256 MB (f32), printing
 * JSON lines {"bench":"allreduce","backend":"ring","ranks","bytes","ms","algbw_gbps","busbw_gbps"}
 * with nccl-tests' definitions (algbw = bytes / time, busbw = algbw x 2(n-1)/n; ms is the median).
 * Compare with bench/anchors/torch_allreduce.py (PyTorch gloo) run on the same machine.
 *   tsx bench/allreduce.ts [--ranks 2,4] [--min-bytes N] [--max-bytes N]
 */
import { launch } from '../lib/distributed/launch';
import { join } from 'node:path';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

async function main() {
  const ranks = arg('ranks', '2,4').split(',').map(Number);
  for (const n of ranks) {
    const code = await launch({
      script: join(__dirname, 'allreduce_worker.ts'),
      nprocPerNode: n,
      masterPort: 20000 + Math.floor(Math.random() * 20000),
      env: { BENCH_MIN_BYTES: arg('min-bytes', '4096'), BENCH_MAX_BYTES: arg('max-bytes', String(256 << 20)) },
      // JSON lines stay parseable: strip the launcher's [rank] prefix on rank 0's output.
      stdout: { write: (s: string) => process.stdout.write(s.replace(/^\[0\] /, '')) } as NodeJS.WritableStream,
    });
    if (code !== 0) process.exit(code);
  }
}

main();
