/**
 * What profiling costs a training step (MLP and CNN, batch 64, CPU). Prints one JSON line per model and mode:
 *   never  profiling never started in this process (the anchor, measured first)
 *   off    after a profiler has started and stopped (the addon's functions restored)
 *   on     while a profiler records every kernel and op call
 * After one profiled block (discarded), all the off blocks run, then all the on blocks: off blocks
 * interleaved with on blocks would pay for collecting the trace events each on block leaves behind.
 * Each figure is the median ms per step over its blocks, with the spread (min and max block) and
 * the ratio to the anchor.
 *   npx tsx bench/profiler_overhead.ts [--steps N] [--blocks B] [--processes P] [--gc]
 * --gc runs a full garbage collection before every block of every mode (the process is started with
 * --expose-gc), so the trace events a profiled block leaves behind are not collected, and charged,
 * inside the unprofiled block after it.
 * never and off cannot alternate inside one process (once started, a profiler has been started), so
 * with --processes P the command runs 2P fresh processes, alternating one that measures only never
 * with one that measures only off and on, and adds a summary line per model: the median over
 * processes of each mode and off/never, so drift falls on both alike there too.
 */
import { spawnSync } from 'node:child_process';
import * as fl from '../lib/index';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const STEPS = arg('--steps', 20);
const BLOCKS = Math.max(5, arg('--blocks', 7));
const PROCESSES = arg('--processes', 0);
const GC = process.argv.includes('--gc');
if (GC && PROCESSES === 0 && typeof (globalThis as { gc?: unknown }).gc !== 'function')
  throw new Error('--gc needs node --expose-gc (or --processes P, which starts its processes with it)');
// In a child of --processes: 'never' measures only never, 'after' only off and on.
const ONLY = process.env.FLOCKML_BENCH_PROFILER_ONLY as 'never' | 'after' | undefined;

type Model = fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor };

function mlp(): Model {
  const { nn } = fl;
  return new nn.Sequential(new nn.Flatten(), new nn.Linear(784, 256), new nn.ReLU(), new nn.Linear(256, 10));
}

function cnn(): Model {
  const { nn } = fl;
  return new nn.Sequential(
    new nn.Conv2d(1, 16, 3),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Linear(16 * 13 * 13, 64),
    new nn.ReLU(),
    new nn.Linear(64, 10),
  );
}

/** Milliseconds per step over one block of STEPS steps. */
async function block(model: Model, opt: fl.optim.Adam, x: fl.Tensor, y: fl.Tensor): Promise<number> {
  if (GC) (globalThis as unknown as { gc: () => void }).gc();
  const t0 = performance.now();
  for (let s = 0; s < STEPS; s++) {
    fl.tidy(() => {
      const l = fl.nn.functional.crossEntropy(model.forward(x), y);
      opt.zeroGrad();
      l.backward();
      opt.step();
    });
    await fl.ready();
  }
  await fl.sync();
  return (performance.now() - t0) / STEPS;
}

function summary(blocks: number[]): { median: number; min: number; max: number } {
  const s = [...blocks].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], min: s[0], max: s[s.length - 1] };
}

async function main(): Promise<void> {
  for (const [name, make] of [
    ['mlp', mlp],
    ['cnn', cnn],
  ] as const) {
    fl.manualSeed(0);
    const model = make();
    const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
    const x = fl.randn([64, 1, 28, 28]);
    const y = fl.randint(0, 10, [64]);
    await block(model, opt, x, y); // warm-up: optimizer state, allocator cache, thread pool
    const never: number[] = [];
    if (ONLY !== 'after') for (let b = 0; b < BLOCKS; b++) never.push(await block(model, opt, x, y));
    const off: number[] = [];
    const on: number[] = [];
    let events = 0;
    if (ONLY !== 'never') {
      // One profiled block first (discarded), so every wrapped call has run and been restored.
      const first = fl.profiler.start({ recordShapes: true });
      await block(model, opt, x, y);
      first.stop();
      for (let b = 0; b < BLOCKS; b++) off.push(await block(model, opt, x, y));
      for (let b = 0; b < BLOCKS; b++) {
        const p = fl.profiler.start({ recordShapes: true });
        on.push(await block(model, opt, x, y));
        p.stop();
        events += p.events().length;
      }
    }
    const anchor = never.length ? summary(never).median : Number.NaN;
    const report = (mode: string, blocks: number[], extra: Record<string, unknown> = {}) => {
      const s = summary(blocks);
      console.log(
        JSON.stringify({
          bench: 'profiler_overhead',
          model: name,
          batch: 64,
          mode,
          blocks: blocks.length,
          steps: STEPS,
          ms_per_step: Number(s.median.toFixed(3)),
          ms_min: Number(s.min.toFixed(3)),
          ms_max: Number(s.max.toFixed(3)),
          vs_never: Number((s.median / anchor).toFixed(3)),
          ...extra,
        }),
      );
    };
    if (never.length) report('never', never);
    if (off.length) {
      report('off', off, { vs_on: Number((summary(off).median / summary(on).median).toFixed(3)) });
      report('on', on, { events_per_block: Math.round(events / BLOCKS) });
    }
    x.dispose();
    y.dispose();
  }
}

/** Alternates fresh processes measuring never and off/on; prints their lines and a summary per model. */
function acrossProcesses(): void {
  const per: Record<string, Record<string, number[]>> = {};
  const args = ['--steps', String(STEPS), '--blocks', String(BLOCKS), ...(GC ? ['--gc'] : [])];
  const execArgv = GC ? ['--expose-gc', ...process.execArgv] : process.execArgv;
  for (let p = 0; p < PROCESSES; p++) {
    for (const only of ['never', 'after'] as const) {
      const r = spawnSync(process.execPath, [...execArgv, __filename, ...args], {
        env: { ...process.env, FLOCKML_BENCH_PROFILER_ONLY: only },
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`child (${only}) failed:\n${r.stderr}`);
      for (const line of r.stdout.trim().split('\n')) {
        const d = JSON.parse(line) as { model: string; mode: string; ms_per_step: number };
        console.log(JSON.stringify({ ...d, process: p }));
        ((per[d.model] ??= {})[d.mode] ??= []).push(d.ms_per_step);
      }
    }
  }
  for (const [model, modes] of Object.entries(per)) {
    const med = (xs: number[]) => summary(xs).median;
    console.log(
      JSON.stringify({
        bench: 'profiler_overhead',
        model,
        summary: 'across processes',
        processes: PROCESSES,
        gc: GC,
        never_ms: med(modes.never),
        off_ms: med(modes.off),
        on_ms: med(modes.on),
        off_vs_never: Number((med(modes.off) / med(modes.never)).toFixed(3)),
        on_vs_never: Number((med(modes.on) / med(modes.never)).toFixed(3)),
      }),
    );
  }
}

if (PROCESSES > 0 && !ONLY) acrossProcesses();
else
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
