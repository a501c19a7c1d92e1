/**
 * Single-process strategies on the Fashion-MNIST CNN (examples/common.ts cnn()):
 *  1. DataParallel step time with 1, 2 and 4 devices at a constant total batch (64), next to the
 *     anchor: plain one-device training of the same batch in the same command. With virtual CPU
 *     devices the intra-op threads are split evenly between them, so the ideal is a flat step time.
 *  2. Pipeline bubble measured (Pipeline.stats()) against (p − 1)/(m + p − 1), for p = 2, 4 stages
 *     (the CNN's layers cut into p contiguous runs) and m = 1, 4, 8 micro-batches, both schedules.
 *  3. DataParallel on 2 devices against DDP with 2 processes (ring backend, bench/ddp_worker.ts),
 *     64 samples per device or rank.
 * Each measurement runs in its own process with FLOCKML_CPU_DEVICES = the devices it uses, so the
 * threads are split between exactly those devices (the anchor gets them all).
 * Prints JSON lines {"bench":"strategies","part":…,…}.
 *   npm run bench -- strategies [--steps N] [--skip-ddp]
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import * as fl from '../lib';
import { median, timeSteps } from './shared/timing';
import { launch } from '../lib/distributed/launch';
import { cnn } from '../examples/common';

const steps = Number(process.argv[process.argv.indexOf('--steps') + 1] || 20);
const F = fl.nn.functional;

const devicesOf = (n: number) => Array.from({ length: n }, (_, i) => `cpu:${i}`);

async function dataParallelMs(n: number, batch: number): Promise<number> {
  fl.manualSeed(0);
  const devices = devicesOf(n);
  const dp = await fl.parallel.DataParallel.create(cnn(), { devices });
  const opt = dp.optimizer(fl.optim.Adam, { lr: 1e-3 });
  const x = fl.randn([batch, 1, 28, 28]);
  const y = fl.randint(0, 10, [batch]).to(dp.outputDevice);
  return timeSteps(steps, async () => {
    fl.tidy(() => F.crossEntropy(dp.forward(x), y).backward());
    await dp.step();
    opt.zeroGrad();
  });
}

async function plainMs(batch: number): Promise<number> {
  fl.manualSeed(0);
  const model = cnn();
  const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
  const x = fl.randn([batch, 1, 28, 28]);
  const y = fl.randint(0, 10, [batch]);
  return timeSteps(steps, async () => {
    fl.tidy(() => {
      F.crossEntropy(model.forward(x), y).backward();
      opt.step();
      opt.zeroGrad();
    });
  });
}

/** The CNN's layers in p contiguous stages of about equal count. */
function cnnStages(p: number): fl.nn.Sequential[] {
  const layers = [...cnn().children()];
  const per = Math.ceil(layers.length / p);
  return Array.from({ length: p }, (_, s) => new fl.nn.Sequential(...layers.slice(s * per, (s + 1) * per)));
}

const batch = 64;
const out = (o: object) => console.log(JSON.stringify({ bench: 'strategies', ...o }));

/** One measurement, in a process whose device count it chose (FLOCKML_CPU_DEVICES). */
async function runPart(part: string, n: number): Promise<void> {
  const threads = fl.getNumThreads();
  if (part === 'anchor') {
    const ms = await plainMs(batch);
    out({ part: 'anchor', what: 'plain one-device step', batch, ms_per_step: +ms.toFixed(2), threads });
  } else if (part === 'data_parallel' || part === 'dp_vs_ddp') {
    const total = part === 'data_parallel' ? batch : n * batch;
    const ms = await dataParallelMs(n, total);
    out({ part, strategy: 'DataParallel', devices: n, total_batch: total, ms_per_step: +ms.toFixed(2), threads });
  } else if (part === 'pipeline') {
    for (const m of [1, 4, 8]) {
      for (const schedule of ['gpipe', '1f1b'] as const) {
        const pipe = new fl.parallel.Pipeline(cnnStages(n), { devices: devicesOf(n), microBatches: m, schedule });
        const x = fl.randn([batch, 1, 28, 28]);
        const y = fl.randint(0, 10, [batch]);
        const bubbles: number[] = [];
        const ms = await timeSteps(steps, async () => {
          (await pipe.step(x, y, (o, t) => F.crossEntropy(o, t))).dispose();
          bubbles.push(pipe.stats()!.bubble);
          for (const q of pipe.parameters()) q.grad = null;
        });
        const st = pipe.stats()!;
        out({
          part,
          schedule,
          stages: n,
          micro_batches: m,
          bubble: +median(bubbles.slice(3)).toFixed(3),
          theory: +st.theory.toFixed(3),
          peak_live: st.peakLiveActivations,
          ms_per_step: +ms.toFixed(2),
        });
      }
    }
  }
}

/** Runs `part` in a child with `n` CPU devices and echoes its JSON lines; returns them parsed. */
function child(part: string, n: number): Record<string, number>[] {
  const tsx = join(__dirname, '..', 'node_modules', '.bin', 'tsx');
  const r = spawnSync(tsx, [__filename, '--steps', String(steps)], {
    encoding: 'utf8',
    env: { ...process.env, FLOCKML_CPU_DEVICES: String(n), BENCH_STRATEGIES_PART: part, BENCH_STRATEGIES_N: String(n) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
  return r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

async function main(): Promise<void> {
  const [anchor] = child('anchor', 1);
  out(anchor);
  for (const n of [1, 2, 4]) {
    const [line] = child('data_parallel', n);
    out({ ...line, vs_anchor: +(line.ms_per_step / anchor.ms_per_step).toFixed(3) });
  }
  for (const p of [2, 4]) for (const line of child('pipeline', p)) out(line);
  if (process.argv.includes('--skip-ddp')) return;
  out(child('dp_vs_ddp', 2)[0]);
  let text = '';
  const code = await launch({
    script: join(__dirname, 'ddp_worker.ts'),
    nprocPerNode: 2,
    masterPort: 20000 + Math.floor(Math.random() * 20000),
    env: { BENCH_STEPS: String(steps), BENCH_BUCKET_MB: '25' },
    stdout: { write: (s: string) => (text += s.replace(/^\[0\] /, '')) } as unknown as NodeJS.WritableStream,
  });
  if (code !== 0) process.exit(code);
  const ddp = JSON.parse(text.trim().split('\n').pop()!) as { ms_per_step: number; threads_per_rank: number };
  out({
    part: 'dp_vs_ddp',
    strategy: 'DistributedDataParallel (2 processes, ring)',
    devices: 2,
    total_batch: 2 * batch,
    ms_per_step: ddp.ms_per_step,
    threads: ddp.threads_per_rank,
  });
}

const part = process.env.BENCH_STRATEGIES_PART;
void (part ? runPart(part, Number(process.env.BENCH_STRATEGIES_N)) : main());
