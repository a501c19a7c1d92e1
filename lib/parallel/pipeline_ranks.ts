/**
 * Pipeline parallelism across ranks: each rank of a process group runs one stage of the model
 * (group rank i runs stage i), each batch is cut into micro-batches, activations go forward and
 * gradients backward between neighbouring stages with the group's send/recv (`ring` on CPU tensors,
 * `nccl` on GPUs), in the GPipe or 1F1B order (pipeline_schedule.ts). Gradients accumulate over the
 * micro-batches in each parameter's `.grad`, weighted so that a mean loss gives exactly the
 * gradient of the whole batch, as training without a pipeline would.
 *
 * Every activation travels behind a small header with its dtype and shape (as
 * torch.distributed.pipelining exchanges them), so a stage needs no declared shapes; one that
 * declares them (`inputShape`, `outputShape`, `inputDtype`) gets ERR_SHAPE / ERR_DTYPE naming both
 * stages when its neighbour disagrees. After a step fails once messages have begun (a shape
 * mismatch, a lost peer, a stage or the loss throwing), the pipeline destroys its group: the
 * byte streams between the ranks are out of step, and the other stages then fail at once
 * (ERR_PEER_LOST) instead of waiting out their timeout.
 *
 * Data parallelism composes: pass a stage wrapped in DistributedDataParallel over the group of the
 * replicas of that stage. All micro-batches but the last are run under its noSync, and the step
 * ends with its syncGradients, so each gradient is averaged across replicas once per step.
 *
 *   const pipeGroup = ...; // ranks in stage order, from fl.distributed.newGroup
 *   const pipe = new fl.parallel.DistributedPipeline(stageModule, { group: pipeGroup, microBatches: 4, schedule: '1f1b' });
 *   const opt = new fl.optim.SGD(stageModule.parameters(), { lr: 0.1 });
 *   const loss = await pipe.step(isFirst ? x : null, isLast ? y : null, (out, y) => F.crossEntropy(out, y));
 *   opt.step();
 *   opt.zeroGrad();
 */
import { Tensor } from '../tensor';
import { keep } from '../memory';
import { ready } from '../device';
import { enableGrad } from '../autograd/grad_mode';
import { tensor, zeros } from '../ops/creation';
import { DTYPES, type CanonicalDType, type DType, toDType } from '../dtype';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkChoice, checkDevice, checkInt } from '../validate';
import { ProcessGroup } from '../distributed/process_group';
import type { Work } from '../distributed/work';
import { DistributedDataParallel } from './ddp';
import { graphBetween } from './pipeline';
import { type Message, type PlannedTick, lastBackward, messagePlan } from './pipeline_ranks_plan';
import { type Action, type Schedule, theoreticalBubble } from './pipeline_schedule';

export interface DistributedPipelineOptions {
  /** The ranks of this pipeline; group rank i runs stage i (newGroup sorts ranks, so list them in stage order). */
  group: ProcessGroup;
  /** Micro-batches per step (≥ 1; at most the batch size). */
  microBatches: number;
  /** 'gpipe' (all forwards, then all backwards) or '1f1b' (default; bounds live activations to the depth). */
  schedule?: Schedule;
  /** Where received activations and gradients are put (default: the group's device, else 'cpu'). */
  device?: string;
  /** This stage's input per sample (without the micro-batch dimension), checked against what the previous stage sends. */
  inputShape?: number[];
  /** This stage's input dtype, checked against what the previous stage sends. */
  inputDtype?: DType;
  /** This stage's output per sample, checked before it is sent. */
  outputShape?: number[];
}

/** Measurements of this rank's last {@link DistributedPipeline.step}. */
export interface DistributedPipelineStats {
  schedule: Schedule;
  stage: number;
  stages: number;
  microBatches: number;
  /** (p − 1)/(m + p − 1), the bubble of uniform stages. */
  theory: number;
  /** The most micro-batches whose activations this stage held at once. */
  peakLiveActivations: number;
  /** Time this rank's loop spent waiting for a neighbour's message (ms). */
  waitMs: number;
  /** The whole step on this rank, to the loss (ms). */
  stepMs: number;
}

/** A stage: a module, or a module wrapped in DistributedDataParallel over its replicas. */
export interface PipelineStageModule {
  forward(x: Tensor): Tensor;
  parameters(): Tensor[];
}

/** Header of an activation: dtype index, ndim, then up to MAX_DIMS sizes (i64). */
const MAX_DIMS = 8;
const HEADER = 2 + MAX_DIMS;
const OPTIONS = ['group', 'microBatches', 'schedule', 'device', 'inputShape', 'inputDtype', 'outputShape'] as const;

interface Live {
  input: Tensor;
  /** The stage's output (the weighted loss on the last stage). */
  output: Tensor;
}

interface Inbox {
  tensor: Tensor;
  done: Promise<void>;
}

const shapeText = (s: readonly number[]) => `[${s.join(', ')}]`;

export class DistributedPipeline {
  readonly stage: PipelineStageModule;
  readonly group: ProcessGroup;
  readonly microBatches: number;
  readonly schedule: Schedule;
  readonly device: string;
  /** This rank's stage index (its rank in the group) and the number of stages. */
  readonly stageIndex: number;
  readonly stages: number;
  readonly #inputShape: number[] | null;
  readonly #inputDtype: CanonicalDType | null;
  readonly #outputShape: number[] | null;
  readonly #plan: PlannedTick[];
  readonly #lastBackward: number;
  #stats: DistributedPipelineStats | null = null;

  constructor(stage: PipelineStageModule, options: DistributedPipelineOptions) {
    const op = 'DistributedPipeline';
    if (!stage || typeof stage.forward !== 'function' || typeof stage.parameters !== 'function')
      throw argError(
        op,
        `the stage must have forward(x) and parameters() (an nn.Module or a DistributedDataParallel), got ${describe(stage)}`,
      );
    const o = checkOptions(op, options, OPTIONS);
    if (!(o.group instanceof ProcessGroup))
      throw argError(
        op,
        `group must be a ProcessGroup whose rank i runs stage i (from initProcessGroup or newGroup), got ${describe(o.group)}`,
      );
    if (o.group.backend === 'local')
      throw argError(op, 'group is a local group of one process; for stages on devices of one process use fl.parallel.Pipeline');
    this.stage = stage;
    this.group = o.group;
    this.stageIndex = o.group.rank;
    this.stages = o.group.size;
    this.microBatches = checkInt(op, 'microBatches', o.microBatches, 1);
    this.schedule = checkChoice(op, 'schedule', o.schedule ?? '1f1b', ['gpipe', '1f1b']);
    const device = checkDevice(op, o.device) ?? o.group.device ?? 'cpu';
    if (o.group.device !== null && device !== o.group.device)
      throw flockError(
        'ERR_DEVICE',
        op,
        `device ${device} differs from the group's device ${o.group.device}, where its messages must live`,
      );
    if (o.group.backend === 'ring' && !device.startsWith('cpu'))
      throw flockError('ERR_DEVICE', op, `the ring backend moves CPU tensors; device ${device} needs an nccl group`);
    this.device = device;
    this.#inputShape = o.inputShape === undefined ? null : perSample(op, 'inputShape', o.inputShape);
    this.#outputShape = o.outputShape === undefined ? null : perSample(op, 'outputShape', o.outputShape);
    this.#inputDtype = o.inputDtype === undefined ? null : toDType(op, o.inputDtype);
    this.#plan = messagePlan(this.schedule, this.stages, this.microBatches);
    this.#lastBackward = lastBackward(this.#plan, this.stageIndex);
  }

  get isFirst(): boolean {
    return this.stageIndex === 0;
  }

  get isLast(): boolean {
    return this.stageIndex === this.stages - 1;
  }

  parameters(): Tensor[] {
    return this.stage.parameters();
  }

  /** Measurements of this rank's last step, or null before the first. */
  stats(): DistributedPipelineStats | null {
    return this.#stats;
  }

  /**
   * Runs one batch through the pipeline. The first stage passes the batch (`input`, split along
   * dim 0 into micro-batches), the last stage the `target` and the `lossFn`; the others pass null.
   * Adds into `.grad` of this stage's parameters the gradient of the batch's loss: each
   * micro-batch's `lossFn(output, target part)` weighted by its share of the batch. Resolves on
   * every stage with the batch's loss (sent from the last stage). Never blocks the event loop.
   */
  async step(input: Tensor | null, target: Tensor | null, lossFn?: (output: Tensor, target: Tensor) => Tensor): Promise<Tensor> {
    const op = 'DistributedPipeline.step';
    const t0 = performance.now();
    const run = new StepRun(this, op, {
      inputShape: this.#inputShape,
      inputDtype: this.#inputDtype,
      outputShape: this.#outputShape,
      lastBackward: this.#lastBackward,
    });
    // Bad arguments are found before anything is sent: the group stays usable.
    run.begin(input, target, lossFn);
    try {
      for (const tick of this.#plan) {
        const mine = tick.actions.find((a) => a.stage === this.stageIndex);
        if (mine) await run.act(mine);
        for (const m of tick.messages) await run.post(m);
        await ready(this.device);
      }
      const loss = await run.finish();
      if (this.stage instanceof DistributedDataParallel) await this.stage.syncGradients();
      this.#stats = {
        schedule: this.schedule,
        stage: this.stageIndex,
        stages: this.stages,
        microBatches: this.microBatches,
        theory: theoreticalBubble(this.stages, this.microBatches),
        peakLiveActivations: run.peakLive,
        waitMs: run.waitMs,
        stepMs: performance.now() - t0,
      };
      return loss;
    } catch (e) {
      run.release();
      // The streams between the ranks are out of step now; closing the group fails the other
      // stages at once instead of leaving them to wait out their timeout.
      this.group.destroy();
      throw e;
    }
  }
}

interface Declared {
  inputShape: number[] | null;
  inputDtype: CanonicalDType | null;
  outputShape: number[] | null;
  lastBackward: number;
}

/** One step on one rank: its micro-batches, what it holds, and its messages in flight. */
class StepRun {
  readonly #pipe: DistributedPipeline;
  readonly #op: string;
  readonly #declared: Declared;
  #input: Tensor | null = null;
  #target: Tensor | null = null;
  #lossFn: ((output: Tensor, target: Tensor) => Tensor) | null = null;
  #parts: (readonly [number, number])[] = [];
  #batch = 0;
  readonly #live = new Map<number, Live>();
  readonly #acts = new Map<number, Inbox>();
  readonly #grads = new Map<number, Inbox>();
  /** Tensors made by this rank's actions, waiting for their turn in the message order. */
  readonly #outbox = new Map<string, Tensor>();
  readonly #sends: Promise<void>[] = [];
  #total: Tensor | null = null;
  peakLive = 0;
  waitMs = 0;

  constructor(pipe: DistributedPipeline, op: string, declared: Declared) {
    this.#pipe = pipe;
    this.#op = op;
    this.#declared = declared;
  }

  get #stage(): number {
    return this.#pipe.stageIndex;
  }

  begin(input: Tensor | null, target: Tensor | null, lossFn?: (output: Tensor, target: Tensor) => Tensor): void {
    const op = this.#op;
    const p = this.#pipe;
    const role = (want: boolean, name: string, v: unknown) => {
      if (want && !(v instanceof Tensor))
        throw argError(op, `stage ${p.stageIndex} ${whyNeeds(name, p)} a Tensor ${name}, got ${describe(v)}`);
      if (!want && v !== null && v !== undefined)
        throw argError(
          op,
          `stage ${p.stageIndex} of ${p.stages} takes no ${name} (only the ${name === 'input' ? 'first' : 'last'} stage does); pass null`,
        );
    };
    role(p.isFirst, 'input', input);
    role(p.isLast, 'target', target);
    if (p.isLast && typeof lossFn !== 'function') throw argError(op, `the last stage needs lossFn, got ${describe(lossFn)}`);
    const m = p.microBatches;
    for (const [name, t] of [
      ['input', input],
      ['target', target],
    ] as const) {
      if (!t) continue;
      if (t.ndim === 0) throw flockError('ERR_SHAPE', op, `${name} must have a batch dimension (dim 0), got a scalar`);
      const batch = t.shape[0];
      const size = Math.ceil(batch / m);
      const parts = Array.from({ length: m }, (_, k) => [k * size, Math.max(0, Math.min(size, batch - k * size))] as const);
      if (parts.some(([, n]) => n === 0))
        throw flockError(
          'ERR_SHAPE',
          op,
          `${name} ${shapeText(t.shape)}: a batch of ${batch} cannot be split into ${m} non-empty micro-batches`,
        );
      this.#parts = parts;
      this.#batch = batch;
    }
    if (input && target && input.shape[0] !== target.shape[0])
      throw flockError(
        'ERR_SHAPE',
        op,
        `input ${shapeText(input.shape)} and target ${shapeText(target.shape)} must share their batch (dim 0)`,
      );
    this.#input = input;
    this.#target = target;
    this.#lossFn = lossFn ?? null;
  }

  /** Runs this stage's forward or backward of one micro-batch, once its input has arrived. */
  async act(a: Action): Promise<void> {
    const p = this.#pipe;
    const op = this.#op;
    const k = a.micro;
    if (a.kind === 'F') {
      let x: Tensor;
      if (p.isFirst) {
        const [start, n] = this.#parts[k];
        x = keep(this.#input!.narrow(0, start, n).to(p.device));
      } else {
        x = await this.#take(this.#acts, k);
        x.requiresGrad_();
      }
      enableGrad(() => {
        const out = p.stage.forward(x);
        if (!(out instanceof Tensor)) throw argError(op, `stage ${p.stageIndex}'s forward must return a Tensor, got ${describe(out)}`);
        if (p.isLast) {
          const [start, n] = this.#parts[k];
          const part = this.#target!.narrow(0, start, n).to(out.device);
          const loss = this.#lossFn!(out, part);
          if (!(loss instanceof Tensor) || loss.numel() !== 1)
            throw argError(op, `lossFn must return a one-element Tensor, got ${describe(loss)}`);
          const weighted = keep(loss.mul(n / this.#batch));
          const value = weighted.detach();
          this.#total = this.#total ? keep(this.#total.add(value)) : keep(value.clone());
          this.#live.set(k, { input: x, output: weighted });
        } else {
          this.#checkOutput(out, k);
          this.#live.set(k, { input: x, output: keep(out) });
          // The send disposes its tensor when done; the output itself stays for backward.
          this.#outbox.set(`act${k}`, keep(out.detach()));
        }
      });
      this.peakLive = Math.max(this.peakLive, this.#live.size);
      return;
    }
    const mine = this.#live.get(k)!;
    const grad = p.isLast ? undefined : await this.#take(this.#grads, k);
    const inner = graphBetween(mine.output, mine.input);
    const backward = () => enableGrad(() => mine.output.backward(grad));
    if (p.stage instanceof DistributedDataParallel && k !== this.#declared.lastBackward) p.stage.noSync(backward);
    else backward();
    for (const t of inner) t.dispose();
    grad?.dispose();
    if (!p.isFirst) {
      const g = mine.input.grad ?? keep(zeros([...mine.input.shape], { dtype: mine.input.dtype, device: p.device }));
      mine.input.grad = null;
      this.#outbox.set(`grad${k}`, g);
    }
    mine.input.dispose();
    mine.output.dispose();
    this.#live.delete(k);
  }

  /** Posts this rank's side of message `m`, if it has one, in the global order. */
  async post(m: Message): Promise<void> {
    const p = this.#pipe;
    const g = p.group;
    if (m.from === this.#stage) {
      const key = `${m.kind}${m.micro}`;
      const t = this.#outbox.get(key)!;
      this.#outbox.delete(key);
      if (m.kind === 'act') {
        const header = keep(headerOf(t, p.device));
        this.#send(g.send(header, m.to), header);
      }
      this.#send(g.send(t, m.to), t);
      return;
    }
    if (m.to !== this.#stage) return;
    if (m.kind === 'act') {
      const header = keep(zeros([HEADER], { dtype: 'i64', device: p.device }));
      let shape: number[];
      let dtype: CanonicalDType;
      try {
        await this.#wait(g.recv(header, m.from));
        [dtype, shape] = this.#readHeader(await header.data(), m);
      } finally {
        header.dispose();
      }
      const buf = keep(zeros(shape, { dtype, device: p.device }));
      this.#acts.set(m.micro, { tensor: buf, done: g.recv(buf, m.from).wait() });
    } else {
      const out = this.#live.get(m.micro)!.output;
      const buf = keep(zeros([...out.shape], { dtype: out.dtype, device: p.device }));
      this.#grads.set(m.micro, { tensor: buf, done: g.recv(buf, m.from).wait() });
    }
  }

  /** Waits for the sends, and gives every stage the batch's loss from the last one. */
  async finish(): Promise<Tensor> {
    const p = this.#pipe;
    await Promise.all(this.#sends);
    // [loss, dtype index] in f64, so every stage returns the loss in the last stage's dtype.
    const last = p.isLast ? [Number((await this.#total!.data())[0]), DTYPES.indexOf(this.#total!.dtype as CanonicalDType)] : [0, 0];
    const msg = keep(tensor(new Float64Array(last), { device: p.device }));
    try {
      if (p.stages > 1) await this.#wait(p.group.broadcast(msg, p.stages - 1));
      if (p.isLast) {
        const total = this.#total!;
        this.#total = null;
        return total;
      }
      const [value, dtype] = Array.from(await msg.data(), Number);
      return keep(
        tensor(new Float64Array([value]), { device: p.device })
          .reshape([])
          .to(DTYPES[dtype] ?? 'f32'),
      );
    } finally {
      msg.dispose();
    }
  }

  /** Frees what the micro-batches in flight still hold (after a failure). */
  release(): void {
    for (const l of this.#live.values()) {
      l.input.dispose();
      l.output.dispose();
    }
    for (const box of [this.#acts, this.#grads]) for (const b of box.values()) b.tensor.dispose();
    for (const t of this.#outbox.values()) t.dispose();
    this.#total?.dispose();
  }

  #send(w: Work, t: Tensor): void {
    this.#sends.push(w.wait().finally(() => t.dispose()));
  }

  async #wait(w: Work): Promise<void> {
    const t0 = performance.now();
    await w.wait();
    this.waitMs += performance.now() - t0;
  }

  async #take(box: Map<number, Inbox>, k: number): Promise<Tensor> {
    const b = box.get(k)!;
    box.delete(k);
    const t0 = performance.now();
    try {
      await b.done;
    } catch (e) {
      b.tensor.dispose();
      throw e;
    }
    this.waitMs += performance.now() - t0;
    return b.tensor;
  }

  #checkOutput(out: Tensor, k: number): void {
    const p = this.#pipe;
    if (out.ndim === 0 || out.ndim > MAX_DIMS)
      throw flockError(
        'ERR_SHAPE',
        this.#op,
        `stage ${p.stageIndex}'s output for micro-batch ${k} is ${shapeText(out.shape)}; what goes to the next stage must have 1 to ${MAX_DIMS} dimensions, the first the micro-batch`,
      );
    const want = this.#declared.outputShape;
    if (want && !sameDims(out.shape.slice(1), want))
      throw flockError(
        'ERR_SHAPE',
        this.#op,
        `stage ${p.stageIndex} declares its output [*, ${want.join(', ')}] but its forward made ${shapeText(out.shape)} for micro-batch ${k}`,
      );
  }

  #readHeader(data: ArrayLike<number | bigint>, m: Message): [CanonicalDType, number[]] {
    const p = this.#pipe;
    const v = Array.from(data, Number);
    const dtype = DTYPES[v[0]];
    const ndim = v[1];
    const shape = v.slice(2, 2 + ndim);
    if (!dtype || !Number.isInteger(ndim) || ndim < 1 || ndim > MAX_DIMS || shape.some((d) => !Number.isInteger(d) || d < 0))
      throw flockError(
        'ERR_COLLECTIVE_MISMATCH',
        this.#op,
        `stage ${p.stageIndex} received from stage ${m.from} a header that does not describe a tensor ([${v.join(', ')}]); is every rank of the group running this pipeline?`,
      );
    const sent = `stage ${m.from} sent micro-batch ${m.micro} as ${shapeText(shape)} ${dtype}`;
    const want = this.#declared.inputShape;
    if (want && !sameDims(shape.slice(1), want))
      throw flockError('ERR_SHAPE', this.#op, `stage ${p.stageIndex} declares its input [*, ${want.join(', ')}], but ${sent}`);
    const wantDtype = this.#declared.inputDtype;
    if (wantDtype && wantDtype !== dtype)
      throw flockError('ERR_DTYPE', this.#op, `stage ${p.stageIndex} declares its input ${wantDtype}, but ${sent}`);
    if (p.isLast && shape[0] !== this.#parts[m.micro][1])
      throw flockError(
        'ERR_SHAPE',
        this.#op,
        `the last stage's target ${shapeText(this.#target!.shape)} gives micro-batch ${m.micro} ${this.#parts[m.micro][1]} rows, but ${sent}; ` +
          'the first and last stages must be given batches of the same size',
      );
    return [dtype, shape];
  }
}

function whyNeeds(name: string, p: DistributedPipeline): string {
  return name === 'input' ? 'is the first stage and needs' : `is the last of ${p.stages} stages and needs`;
}

function headerOf(t: Tensor, device: string): Tensor {
  const v = new BigInt64Array(HEADER);
  v[0] = BigInt(DTYPES.indexOf(t.dtype as CanonicalDType));
  v[1] = BigInt(t.ndim);
  t.shape.forEach((d, i) => {
    v[2 + i] = BigInt(d);
  });
  return tensor(v, { device });
}

function perSample(op: string, name: string, v: unknown): number[] {
  if (!Array.isArray(v) || v.length >= MAX_DIMS || v.some((d) => !Number.isInteger(d) || d < 0))
    throw argError(
      op,
      `${name} must list the sizes of one sample (without the micro-batch dimension; at most ${MAX_DIMS - 1}), got ${describe(v)}`,
    );
  return [...v];
}

function sameDims(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}
