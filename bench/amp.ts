/**
 * Mixed precision and checkpointing on the CPU, each figure next to its f32 / no-checkpoint anchor
 * from the same command. Prints JSON lines.
 *   - Fashion-MNIST MLP (batch 100) and CNN (batch 64): training step time and test accuracy after
 *     `--steps` steps (default: one epoch), f32 vs fl.autocast bf16 (f32 weights, Adam), trained
 *     side by side in alternating chunks of `--chunk` steps.
 *   - A 16-layer MLP (width 2048, batch 256): peak memory (fl.memory() peakBytes, each variant in a
 *     fresh process), split into weights, gradients and the rest (activations and temporaries), the
 *     memory the graph holds after forward, and step time, with and without checkpointing every 4
 *     layers, next to PyTorch's (bench/anchors/torch_checkpoint_memory.py, torch.utils.checkpoint);
 *     then one summary line of both sets of ratios next to the goals.
 *   npm run bench -- amp [--steps N] [--chunk N] [--deep-steps N] [--skip-fashion] [--skip-deep] [--no-anchor]
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import * as fl from '../lib';
import { cnn, normalize } from '../examples/common';
import { flag, numberFlag } from './shared/args';
import { anchorEnv } from './anchors/serve';

const argv = process.argv.slice(2);
const { nn } = fl;
type Model = fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor };

function mlp(): Model {
  return new nn.Sequential(new nn.Flatten(), new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10));
}

async function evaluate(model: Model, bf16: boolean): Promise<number> {
  const test = fl.datasets.fashionMNIST({ split: 'test' });
  const loader = new fl.data.DataLoader(test, { batchSize: 1000 });
  model.eval();
  let correct = 0;
  for (const [x, y] of loader) {
    const hits = fl.noGrad(() =>
      fl.tidy(() => {
        const run = () => model.forward(normalize(x)).argmax(1).eq(y).sum();
        return bf16 ? fl.autocast({ device: 'cpu', dtype: 'bf16' }, run) : run();
      }),
    );
    correct += await hits.item();
    x.dispose();
    y.dispose();
  }
  return correct / test.length;
}

/**
 * One variant's training run: its own model, optimizer and loader (same seeds for both variants,
 * so both see the same batches), stepped a chunk at a time by {@link fashion}.
 */
class Trainer {
  readonly model: Model;
  readonly opt: fl.optim.Adam;
  readonly batches: AsyncIterator<fl.Tensor[]>;
  readonly chunkMs: number[] = [];
  readonly deviceMs: number[] = [];
  done = 0;

  constructor(
    make: () => Model,
    batch: number,
    readonly bf16: boolean,
  ) {
    fl.manualSeed(0);
    this.model = make();
    this.opt = new fl.optim.Adam(this.model.parameters(), { lr: 1e-3 });
    const loader = new fl.data.DataLoader(fl.datasets.fashionMNIST({ split: 'train' }), { batchSize: batch, shuffle: true, seed: 0 });
    this.batches = loader[Symbol.asyncIterator]();
    this.model.train();
  }

  /** Runs `n` steps (fewer at the epoch's end) and returns how many ran. */
  async steps(n: number): Promise<number> {
    let ran = 0;
    for (; ran < n; ran++) {
      const next = await this.batches.next();
      if (next.done) break;
      const [x, y] = next.value;
      fl.tidy(() => {
        const fwd = () => fl.nn.functional.crossEntropy(this.model.forward(normalize(x)), y);
        const loss = this.bf16 ? fl.autocast({ device: 'cpu', dtype: 'bf16' }, fwd) : fwd();
        this.opt.zeroGrad();
        loss.backward();
        this.opt.step();
      });
      x.dispose();
      y.dispose();
    }
    await fl.sync();
    this.done += ran;
    return ran;
  }

  /** A timed chunk: its ms per step joins chunkMs. */
  async timed(n: number): Promise<void> {
    const t0 = performance.now();
    const ran = await this.steps(n);
    if (ran > 0) this.chunkMs.push((performance.now() - t0) / ran);
  }

  /** A chunk under the profiler: the kernels' time on the stream per step (apart from the JS thread's) joins deviceMs. */
  async profiled(n: number): Promise<void> {
    const prof = fl.profiler.start({ activities: ['cpu'] });
    const ran = await this.steps(n);
    prof.stop();
    if (ran > 0) this.deviceMs.push(prof.keyAverages().reduce((sum, r) => sum + r.selfDeviceUs, 0) / 1000 / ran);
  }
}

interface Run {
  ms: number;
  deviceMs: number;
  acc: number;
}

/**
 * f32 and autocast bf16 trained side by side on the same batches: the two alternate in chunks of
 * `--chunk` steps (default 25), so both see the same machine (a loaded 2-core VM swings by tens of
 * percent over a minute). The first chunk of each warms up allocations and the thread pool; after
 * it, every fourth round runs under the profiler (device_ms_per_step: the median such chunk's
 * kernel time on the stream) and the others are timed (ms_per_step: the median chunk's). Then the
 * summary line of the ratios next to the goals.
 */
async function fashion(name: string, make: () => Model, batch: number): Promise<void> {
  const runs = [new Trainer(make, batch, false), new Trainer(make, batch, true)];
  const perEpoch = Math.ceil(60000 / batch);
  const steps = Math.min(numberFlag('steps', perEpoch), perEpoch);
  const chunk = Math.max(1, Math.min(numberFlag('chunk', 25), Math.floor(steps / 4)));
  for (const r of runs) await r.steps(chunk);
  for (let round = 0; runs.some((r) => r.done < steps); round++)
    for (const r of runs) {
      const n = Math.min(chunk, steps - r.done);
      if (n <= 0) continue;
      if (round % 4 === 0) await r.profiled(n);
      else await r.timed(n);
    }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1] ?? Number.NaN;
  const results: Run[] = [];
  for (const r of runs) {
    const acc = await evaluate(r.model, r.bf16);
    const run = { ms: median(r.chunkMs), deviceMs: median(r.deviceMs), acc };
    results.push(run);
    console.log(
      JSON.stringify({
        bench: name,
        precision: r.bf16 ? 'autocast-bf16' : 'f32',
        device: 'cpu',
        threads: fl.getNumThreads(),
        batch,
        steps: r.done,
        epoch_fraction: Number((r.done / perEpoch).toFixed(3)),
        ms_per_step: Number(run.ms.toFixed(3)),
        ms_per_step_mean: Number((r.chunkMs.reduce((a, b) => a + b, 0) / r.chunkMs.length).toFixed(3)),
        timed_chunks: r.chunkMs.length,
        profiled_chunks: r.deviceMs.length,
        device_ms_per_step: Number(run.deviceMs.toFixed(3)),
        test_accuracy: Number(acc.toFixed(4)),
      }),
    );
  }
  const [f32, bf16] = results;
  console.log(
    JSON.stringify({
      bench: name,
      summary: 'autocast-bf16 vs f32',
      step_time_ratio: Number((bf16.ms / f32.ms).toFixed(3)),
      device_time_ratio: Number((bf16.deviceMs / f32.deviceMs).toFixed(3)),
      accuracy_delta_points: Number(((bf16.acc - f32.acc) * 100).toFixed(2)),
      goal_step_time_ratio: 0.8,
      goal_accuracy_within_points: 0.5,
    }),
  );
}

/** One variant of the deep MLP in this process: prints its peak memory and step time. */
async function deep(variant: 'plain' | 'checkpoint', steps: number): Promise<void> {
  fl.manualSeed(0);
  const layers: fl.nn.Module[] = [];
  for (let i = 0; i < 16; i++) layers.push(new nn.Linear(2048, 2048), new nn.ReLU());
  const model = new nn.Sequential(...layers);
  const opt = new fl.optim.SGD(model.parameters(), { lr: 1e-3 });
  const x = fl.randn([256, 2048]);
  await fl.sync();
  const base = fl.memory().cpu.bytes;
  let heldAfterForward = 0;
  const step = (measureHeld = false) =>
    fl.tidy(() => {
      // Gradients are zero-filled, not freed, so weights + gradients stay allocated through the step
      // and everything the peak holds above them is activations and temporaries.
      opt.zeroGrad(false);
      // Checkpointing every 4 layers: 4 segments of 8 modules (Linear + ReLU pairs).
      const y = variant === 'checkpoint' ? fl.utils.checkpointSequential(model, 4, x) : model.forward(x);
      if (measureHeld) {
        // What the graph keeps for backward (the bench may block; the library never does).
        fl.syncSync();
        heldAfterForward = fl.memory().cpu.bytes - base;
      }
      const loss = y.square().mean();
      loss.backward();
      opt.step();
    });
  step(true); // warm-up, and the memory the graph holds after forward
  await fl.sync();
  const t0 = performance.now();
  // Each step drains before the next, as a loop over a DataLoader waits for the queue: the peak is
  // one step's, not several steps' queued ahead.
  for (let i = 0; i < steps; i++) {
    step();
    await fl.sync();
  }
  const ms = (performance.now() - t0) / steps;
  const peak = fl.memory().cpu.peakBytes;
  // The gradients (SGD keeps no state) stay until the next zeroGrad: weights + gradients are the
  // model state no checkpointing can shed; the rest of the peak is activations and temporaries.
  const state = fl.memory().cpu.bytes - base;
  const mb = (b: number) => Number((b / 2 ** 20).toFixed(1));
  console.log(
    JSON.stringify({
      bench: 'deep-mlp-16x2048',
      variant,
      device: 'cpu',
      threads: fl.getNumThreads(),
      batch: 256,
      steps,
      ms_per_step: Number(ms.toFixed(1)),
      peak_mb: mb(peak),
      weights_mb: mb(base),
      grads_mb: mb(state),
      peak_above_weights_mb: mb(peak - base),
      peak_above_model_state_mb: mb(peak - base - state),
      held_after_forward_mb: mb(heldAfterForward),
    }),
  );
}

interface DeepResult {
  ms_per_step: number;
  weights_mb: number;
  held_after_forward_mb: number;
  peak_above_weights_mb: number;
  peak_above_model_state_mb: number;
}

async function main(): Promise<void> {
  const variant = flag('deep-variant');
  if (variant !== undefined) return deep(variant as 'plain' | 'checkpoint', numberFlag('deep-steps', 3));
  if (!argv.includes('--skip-fashion')) {
    await fashion('fashion-mnist-mlp', mlp, 100);
    await fashion('fashion-mnist-cnn', cnn, 64);
  }
  if (!argv.includes('--skip-deep')) deepSideBySide();
}

/**
 * Each deep-MLP variant in a fresh process, so each peak is its own, then PyTorch's
 * (bench/anchors/torch_checkpoint_memory.py, torch.utils.checkpoint) in the same command; the summary
 * sets the ratios side by side with the goals.
 */
function deepSideBySide(): void {
  const ours: Record<string, DeepResult> = {};
  const torch: Record<string, DeepResult> = {};
  let anchorSkipped: string | undefined;
  for (const v of ['plain', 'checkpoint']) {
    ours[v] = lastJsonLine(
      `deep-mlp ${v}`,
      spawnSync(process.execPath, [...process.execArgv, __filename, '--deep-variant', v, ...argv], {
        stdio: ['ignore', 'pipe', 'inherit'],
        encoding: 'utf8',
      }),
    );
    if (argv.includes('--no-anchor') || anchorSkipped) continue;
    const r = spawnSync('/usr/bin/python3', [ANCHOR, v, '--steps', String(numberFlag('deep-steps', 3))], {
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
      env: anchorEnv(),
    });
    if (r.status === 0) torch[v] = lastJsonLine(`torch deep-mlp ${v}`, r);
    else anchorSkipped = (r.stderr || String(r.error)).trim().split('\n').pop();
  }
  if (anchorSkipped) console.log(JSON.stringify({ bench: 'deep-mlp-16x2048', impl: 'torch', skipped: anchorSkipped }));
  const ratios = (res: Record<string, DeepResult>, prefix: string) => {
    const { plain, checkpoint } = res;
    if (!plain || !checkpoint) return {};
    const ratio = (a: number, b: number) => Number((a / b).toFixed(3));
    // Peak with the weights: the anchor reports no whole-process peak (its heap holds the
    // interpreter), so both count weights + the peak above them.
    const peak = (d: DeepResult) => d.weights_mb + d.peak_above_weights_mb;
    return {
      [`${prefix}peak_ratio`]: ratio(peak(checkpoint), peak(plain)),
      [`${prefix}activation_peak_ratio`]: ratio(checkpoint.peak_above_model_state_mb, plain.peak_above_model_state_mb),
      [`${prefix}held_after_forward_ratio`]: ratio(checkpoint.held_after_forward_mb, plain.held_after_forward_mb),
      [`${prefix}step_time_ratio`]: ratio(checkpoint.ms_per_step, plain.ms_per_step),
    };
  };
  console.log(
    JSON.stringify({
      bench: 'deep-mlp-16x2048',
      summary: 'checkpoint vs plain',
      ...ratios(ours, ''),
      ...ratios(torch, 'torch_'),
      goal_peak_ratio: 0.4,
      goal_step_time_ratio: 1.4,
    }),
  );
}

const ANCHOR = join(__dirname, 'anchors', 'torch_checkpoint_memory.py');

/** The last line a variant's process printed, echoed and parsed; throws when the process failed. */
function lastJsonLine(what: string, r: SpawnSyncReturns<string>): DeepResult {
  if (r.status !== 0) throw new Error(`${what} exited with ${r.status}: ${r.stderr ?? ''}`);
  const line = r.stdout.trim().split('\n').pop() as string;
  console.log(line);
  return JSON.parse(line) as DeepResult;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
