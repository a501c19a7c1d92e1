/**
 * Pipeline across 2 ranks (DistributedPipeline, ring backend) against one process, on the
 * Fashion-MNIST CNN (examples/common.ts cnn()) cut into conv blocks | classifier, batch 128, Adam.
 *  - anchor: one process trains the whole CNN on the batch (forward, backward, optimizer step),
 *    with all of the machine's intra-op threads; measured in the same command. Also the same
 *    micro-batches accumulated in one process (anchor_accumulation), which separates the effect
 *    of smaller GEMMs from that of the second process.
 *  - pipeline: 2 processes started by the launcher, each with half the threads (as 2 devices would
 *    each have their own), GPipe and 1F1B with 1, 4 and 8 micro-batches; the last stage reports.
 * Each figure is the median step time over --steps steps after 3 warm-up steps; wait_ms is the last
 * stage's median time per step spent waiting for messages (DistributedPipelineStats.waitMs).
 * Prints JSON lines {"bench":"pipeline_ranks","part":"anchor"|"pipeline",…}.
 *   npm run bench -- pipeline_ranks [--steps N] [--batch B]
 */
import * as fl from '../lib';
import { median, timeSteps } from './shared/timing';
import { launch } from '../lib/distributed/launch';
import { cnn } from '../examples/common';
import { numberFlag } from './shared/args';

const steps = numberFlag('steps', 20);
const batch = numberFlag('batch', 128);
const F = fl.nn.functional;
const CUT = 7; // conv blocks and flatten | the two linear layers

function data() {
  fl.manualSeed(1);
  return { x: fl.keep(fl.randn([batch, 1, 28, 28])), y: fl.keep(fl.randint(0, 10, [batch])) };
}

/** One process, the whole CNN; the batch in `micro` parts whose gradients accumulate (1: the whole batch at once). */
async function anchor(micro: number): Promise<number> {
  const { x, y } = data();
  fl.manualSeed(0);
  const model = cnn();
  const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
  const size = Math.ceil(batch / micro);
  return timeSteps(steps, async () => {
    for (let at = 0; at < batch; at += size) {
      const n = Math.min(size, batch - at);
      fl.tidy(() =>
        F.crossEntropy(model.forward(x.narrow(0, at, n)), y.narrow(0, at, n))
          .mul(n / batch)
          .backward(),
      );
    }
    fl.tidy(() => opt.step());
    opt.zeroGrad();
  });
}

/** One rank of the pipeline (started by the launcher). */
async function rank(): Promise<void> {
  const schedule = process.env.BENCH_SCHEDULE as 'gpipe' | '1f1b';
  const microBatches = Number(process.env.BENCH_MICRO);
  const pg = await fl.distributed.initProcessGroup({ backend: 'ring' });
  fl.setNumThreads(Math.max(1, Math.floor(fl.getNumThreads() / pg.size)));
  const { x, y } = data();
  fl.manualSeed(0);
  const layers = [...cnn().children()];
  const module = new fl.nn.Sequential(...(pg.rank === 0 ? layers.slice(0, CUT) : layers.slice(CUT)));
  const pipe = new fl.parallel.DistributedPipeline(module, { group: pg, microBatches, schedule });
  const opt = new fl.optim.Adam(module.parameters(), { lr: 1e-3 });
  const waits: number[] = [];
  const ms = await timeSteps(steps, async () => {
    const loss = await pipe.step(pipe.isFirst ? x : null, pipe.isLast ? y : null, (o, t) => F.crossEntropy(o, t));
    loss.dispose();
    fl.tidy(() => opt.step());
    opt.zeroGrad();
    waits.push(pipe.stats()!.waitMs);
  });
  if (pipe.isLast) {
    const st = pipe.stats()!;
    console.log(JSON.stringify({ ms_per_step: ms, wait_ms: median(waits.slice(3)), theory: st.theory, threads: fl.getNumThreads() }));
  }
  await fl.distributed.destroyProcessGroup();
}

async function main(): Promise<void> {
  const out = (o: Record<string, unknown>) => console.log(JSON.stringify({ bench: 'pipeline_ranks', ...o }));
  const anchorMs = await anchor(1);
  out({ part: 'anchor', strategy: 'one process, whole CNN', batch, ms_per_step: +anchorMs.toFixed(2), threads: fl.getNumThreads() });
  // The same micro-batches in one process: how much of the difference is micro-batching alone.
  const accumMs = new Map<number, number>();
  for (const micro of [4, 8]) {
    accumMs.set(micro, await anchor(micro));
    out({
      part: 'anchor_accumulation',
      strategy: 'one process, whole CNN, gradient accumulation',
      batch,
      micro_batches: micro,
      ms_per_step: +accumMs.get(micro)!.toFixed(2),
      threads: fl.getNumThreads(),
    });
  }
  for (const schedule of ['gpipe', '1f1b'])
    for (const micro of [1, 4, 8]) {
      let text = '';
      const code = await launch({
        script: __filename,
        args: ['--steps', String(steps), '--batch', String(batch)],
        nprocPerNode: 2,
        masterPort: 20000 + Math.floor(Math.random() * 10000),
        env: { BENCH_PIPELINE_RANK: '1', BENCH_SCHEDULE: schedule, BENCH_MICRO: String(micro) },
        stdout: { write: (s: string) => (text += s) } as unknown as NodeJS.WritableStream,
      });
      if (code !== 0) process.exit(code);
      const line = text
        .split('\n')
        .map((l) => l.replace(/^\[\d+\] /, ''))
        .find((l) => l.startsWith('{'));
      const r = JSON.parse(line!) as { ms_per_step: number; wait_ms: number; theory: number; threads: number };
      out({
        part: 'pipeline',
        ranks: 2,
        schedule,
        micro_batches: micro,
        batch,
        ms_per_step: +r.ms_per_step.toFixed(2),
        vs_anchor: +(r.ms_per_step / anchorMs).toFixed(3),
        ...(accumMs.has(micro) ? { vs_accumulation: +(r.ms_per_step / accumMs.get(micro)!).toFixed(3) } : {}),
        wait_ms: +r.wait_ms.toFixed(2),
        theory_bubble: +r.theory.toFixed(3),
        threads_per_rank: r.threads,
      });
    }
}

void (process.env.BENCH_PIPELINE_RANK ? rank() : main()).catch((e) => {
  console.error(e);
  process.exit(1);
});
