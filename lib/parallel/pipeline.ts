/**
 * Pipeline parallelism: a model cut into stages, stage i on devices[i], each batch cut into
 * micro-batches that stream through the stages. Every stage's work is queued on its own device's
 * stream and crosses to the next device as a stream-ordered copy, so while stage 1 runs
 * micro-batch 0, stage 0 already runs micro-batch 1. Gradients accumulate over the micro-batches
 * in each parameter's `.grad`, as one device with gradient accumulation would.
 *
 *   const pipe = new fl.parallel.Pipeline([encoder, head], { devices: ['cpu:0', 'cpu:1'], microBatches: 8, schedule: '1f1b' });
 *   const opt = new fl.optim.SGD(pipe.parameters(), { lr: 0.1 });
 *   const loss = await pipe.step(x, y, (out, y) => fl.nn.functional.crossEntropy(out, y));
 *   opt.step();
 *   opt.zeroGrad();
 *   pipe.stats();   // { bubble, theory, peakLiveActivations, ... }
 */
import { Tensor } from '../tensor';
import { keep } from '../memory';
import { native } from '../native';
import { ready } from '../device';
import { enableGrad } from '../dispatch/grad_mode';
import type { Module } from '../nn/module';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkChoice, checkInt } from '../validate';
import { checkDevices } from './devices';
import { byteSize } from './buckets';
import { type Action, type Schedule, theoreticalBubble, ticks } from './pipeline_schedule';

export interface PipelineOptions {
  /** One device per stage. */
  devices: string[];
  /** Micro-batches per step (≥ 1; at most the batch size). */
  microBatches: number;
  /** 'gpipe' (all forwards, then all backwards) or '1f1b' (default; bounds live activations to the depth). */
  schedule?: Schedule;
}

/** Measurements of the last {@link Pipeline.step}. */
export interface PipelineStats {
  schedule: Schedule;
  stages: number;
  microBatches: number;
  /**
   * Measured bubble: the fraction of stage-time the devices sat idle between the step's first
   * start and last finish, 1 − Σ busy / (p · span). Busy time is taken on each device's stream
   * (markers before and after each stage's forward or backward, once its input had arrived).
   */
  bubble: number;
  /** (p − 1)/(m + p − 1), the bubble of uniform stages. */
  theory: number;
  /** From the first stage starting to the last one finishing, on the devices (ms). */
  spanMs: number;
  /** Busy time of each stage (ms). */
  busyMs: number[];
  /** The most micro-batches whose activations a stage held at once, per stage. */
  peakLivePerStage: number[];
  /** The largest of {@link peakLivePerStage}. */
  peakLiveActivations: number;
  /**
   * Peak bytes of the activations held for micro-batches in flight, summed over the stages: each
   * one's stage input, output and every intermediate of its recorded graph, counted when its
   * forward is queued and released when its backward has been.
   */
  peakActivationBytes: number;
}

type StageModule = Module & { forward(x: never): unknown };

interface Live {
  input: Tensor;
  /** The stage's output (the scaled loss on the last stage). */
  output: Tensor;
  /** Bytes of the input, the output and the graph between them. */
  bytes: number;
}

export class Pipeline {
  readonly stages: StageModule[];
  readonly devices: string[];
  readonly microBatches: number;
  readonly schedule: Schedule;
  #stats: PipelineStats | null = null;

  constructor(stages: StageModule[], options: PipelineOptions) {
    const op = 'Pipeline';
    if (!Array.isArray(stages) || stages.length === 0 || stages.some((s) => typeof s?.forward !== 'function' || typeof s.to !== 'function'))
      throw argError(op, `stages must be a non-empty array of nn.Modules, got ${describe(stages)}`);
    const o = checkOptions(op, options, ['devices', 'microBatches', 'schedule']);
    this.devices = checkDevices(op, o.devices);
    if (this.devices.length !== stages.length)
      throw argError(op, `devices must name one device per stage: ${stages.length} stages, ${this.devices.length} devices`);
    this.microBatches = checkInt(op, 'microBatches', o.microBatches, 1);
    this.schedule = checkChoice(op, 'schedule', o.schedule ?? '1f1b', ['gpipe', '1f1b']);
    this.stages = stages.map((s, i) => s.to(this.devices[i]));
  }

  parameters(): Tensor[] {
    return this.stages.flatMap((s) => s.parameters());
  }

  /** Measurements of the last step, or null before the first. */
  stats(): PipelineStats | null {
    return this.#stats;
  }

  /**
   * Runs forward and backward of `input` (split along dim 0 into micro-batches) through the
   * stages, adding into each parameter's `.grad` the gradient of the batch's loss: each
   * micro-batch's `lossFn(output, target part)` weighted by its share of the batch (a mean loss
   * gives the full batch's mean). Resolves, once the devices have finished, with the batch's loss
   * (on the last device). Awaits device readiness between ticks; never blocks the event loop.
   */
  async step(input: Tensor, target: Tensor, lossFn: (output: Tensor, target: Tensor) => Tensor): Promise<Tensor> {
    const op = 'Pipeline.step';
    if (!(input instanceof Tensor) || !(target instanceof Tensor))
      throw argError(op, `input and target must be Tensors, got ${describe(input)} and ${describe(target)}`);
    if (typeof lossFn !== 'function') throw argError(op, `lossFn must be a function, got ${describe(lossFn)}`);
    const batch = input.shape[0];
    if (input.ndim === 0 || target.ndim === 0 || target.shape[0] !== batch)
      throw flockError(
        'ERR_SHAPE',
        op,
        `input [${input.shape.join(',')}] and target [${target.shape.join(',')}] must share their batch (dim 0)`,
      );
    const m = this.microBatches;
    if (batch < m) throw flockError('ERR_SHAPE', op, `a batch of ${batch} cannot be split into ${m} micro-batches`);
    const p = this.stages.length;
    const size = Math.ceil(batch / m);
    const parts = Array.from({ length: m }, (_, k) => [k * size, Math.max(0, Math.min(size, batch - k * size))] as const);
    if (parts.some(([, n]) => n === 0))
      throw flockError('ERR_SHAPE', op, `a batch of ${batch} cannot be split into ${m} non-empty micro-batches`);

    const live: (Live | null)[][] = this.stages.map(() => parts.map(() => null));
    const liveCount = this.stages.map(() => 0);
    const peakLive = this.stages.map(() => 0);
    const marks: { stage: number; start: Promise<ArrayBuffer>; end: Promise<ArrayBuffer> }[] = [];
    let liveBytes = 0;
    let peakBytes = 0;
    let total: Tensor | null = null;

    const run = (a: Action): void => {
      const s = a.stage;
      const dev = this.devices[s];
      const [start, n] = parts[a.micro];
      if (a.kind === 'F') {
        const source = s === 0 ? input.narrow(0, start, n) : live[s - 1][a.micro]!.output.detach();
        const x = keep(source.to(dev));
        if (s > 0) x.requiresGrad_();
        const t0 = native.syncTime(dev);
        let out = this.stages[s].forward(x as never) as Tensor;
        if (!(out instanceof Tensor)) throw argError(op, `stage ${s}'s forward must return a Tensor, got ${describe(out)}`);
        if (s === p - 1) {
          const loss = lossFn(out, target.narrow(0, start, n).to(dev));
          if (!(loss instanceof Tensor) || loss.numel() !== 1)
            throw argError(op, `lossFn must return a one-element Tensor, got ${describe(loss)}`);
          out = loss.mul(n / batch);
          const part = out.detach();
          total = total ? keep(total.add(part)) : keep(part.clone());
        }
        marks.push({ stage: s, start: t0, end: native.syncTime(dev) });
        const bytes = [x, out, ...graphBetween(out, x)].reduce((n, t) => n + byteSize(t), 0);
        live[s][a.micro] = { input: x, output: keep(out), bytes };
        peakLive[s] = Math.max(peakLive[s], ++liveCount[s]);
        liveBytes += bytes;
        peakBytes = Math.max(peakBytes, liveBytes);
      } else {
        const mine = live[s][a.micro]!;
        const downstream = s < p - 1 ? live[s + 1][a.micro]! : null;
        const grad = downstream ? keep(downstream.input.grad!.to(dev)) : undefined;
        const t0 = native.syncTime(dev);
        const inner = graphBetween(mine.output, mine.input);
        mine.output.backward(grad);
        marks.push({ stage: s, start: t0, end: native.syncTime(dev) });
        // This micro-batch's activations on this stage, and the next stage's input and its
        // gradient, are no longer needed.
        for (const t of inner) t.dispose();
        grad?.dispose();
        if (downstream) {
          downstream.input.grad?.dispose();
          downstream.input.dispose();
        }
        if (s === 0) mine.input.dispose();
        mine.output.dispose();
        liveCount[s]--;
        liveBytes -= mine.bytes;
      }
    };

    try {
      for (const tick of ticks(this.schedule, p, m)) {
        enableGrad(() => {
          for (const a of tick) run(a);
        });
        await ready();
      }
    } catch (e) {
      // A stage or the loss threw: free what the micro-batches in flight still hold.
      for (const row of live)
        for (const l of row) {
          l?.input.dispose();
          l?.output.dispose();
        }
      (total as Tensor | null)?.dispose();
      throw e;
    }
    const stamps = await Promise.all(marks.map(async (k) => [k.stage, await k.start, await k.end] as const));
    const busy = this.stages.map(() => 0);
    let first = Infinity;
    let end = -Infinity;
    for (const [s, a, b] of stamps) {
      const t0 = new Float64Array(a, 0, 1)[0];
      const t1 = new Float64Array(b, 0, 1)[0];
      busy[s] += t1 - t0;
      first = Math.min(first, t0);
      end = Math.max(end, t1);
    }
    const span = Math.max(end - first, 1e-9);
    this.#stats = {
      schedule: this.schedule,
      stages: p,
      microBatches: m,
      bubble: Math.max(0, 1 - busy.reduce((x, y) => x + y, 0) / (p * span)),
      theory: theoreticalBubble(p, m),
      spanMs: span,
      busyMs: busy,
      peakLivePerStage: peakLive,
      peakLiveActivations: Math.max(...peakLive),
      peakActivationBytes: peakBytes,
    };
    if (!total) throw flockError('ERR_ARG', op, 'no micro-batch reached the last stage');
    return total;
  }
}

/**
 * The intermediate tensors of the graph from `output` back to `input` (neither included, nor any
 * leaf such as a parameter): what the stage's forward made for this micro-batch.
 */
export function graphBetween(output: Tensor, input: Tensor): Tensor[] {
  const out: Tensor[] = [];
  const seen = new Set<Tensor>([output, input]);
  const stack = [...(output.gradFn?.inputs ?? [])];
  while (stack.length) {
    const t = stack.pop()!;
    if (seen.has(t) || !t.gradFn) continue;
    seen.add(t);
    out.push(t);
    stack.push(...t.gradFn.inputs);
  }
  return out;
}
