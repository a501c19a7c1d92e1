/**
 * DDP step time of the Fashion-MNIST CNN (batch 64 per rank) on 1 and 2 local ranks (ring
 * backend), the same step under noSync() (no communication), and the share of allreduce time
 * hidden behind backward:  hidden = 1 − exposed / T_comm, where exposed is how long the last
 * bucket's allreduce ran on after the slowest rank's device had finished backward, and T_comm the
 * same bucket allreduces run alone (medians over the timed steps; hidden_share_mean uses the mean
 * exposed time, exposed_mean_ms, instead).
 * rank_skew_ms is how far apart the ranks finished backward.
 * Prints JSON lines {"bench":"ddp","ranks":…,"ms_per_step":…,"local_ms":…,"allreduce_ms":…,
 * "exposed_ms":…,"rank_skew_ms":…,"hidden_share":…,"hidden_share_mean":…}.
 *   npm run bench -- ddp [--steps N] [--bucket-mb M]
 */
import { join } from 'node:path';
import { launch } from '../lib/distributed/launch';
import { stringFlag } from './shared/args';

async function main(): Promise<void> {
  for (const n of [1, 2]) {
    const code = await launch({
      script: join(__dirname, 'ddp_worker.ts'),
      nprocPerNode: n,
      masterPort: 20000 + Math.floor(Math.random() * 20000),
      env: { BENCH_STEPS: stringFlag('steps', '50'), BENCH_BUCKET_MB: stringFlag('bucket-mb', '0.25') },
      stdout: { write: (s: string) => process.stdout.write(s.replace(/^\[0\] /, '')) } as NodeJS.WritableStream,
    });
    if (code !== 0) process.exit(code);
  }
}

void main();
