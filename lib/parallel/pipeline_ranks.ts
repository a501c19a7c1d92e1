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
 * stages when its neighbour disagrees. The header also says what the sender runs (schedule or
 * forward(), micro-batch count): stages called differently fail with ERR_COLLECTIVE_MISMATCH. After a step fails once messages have begun (a shape
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
import { noGrad } from '../dispatch/grad_mode';
import { zeros } from '../ops/creation';
import { type CanonicalDType, type DType, toDType } from '../dtype';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkChoice, checkDevice, checkInt } from '../validate';
import { ProcessGroup } from '../distributed/process_group';
import { DistributedDataParallel } from './ddp';
import { type PlannedTick, lastBackward, messagePlan } from './pipeline_ranks_plan';
import { HEADER, StepRun, checkOutput, headerOf, perSample, readHeader, settled, splitBatch } from './pipeline_ranks_step';
import { cat } from '../ops/shape';
import { type Schedule, theoreticalBubble } from './pipeline_schedule';

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

const OPTIONS = ['group', 'microBatches', 'schedule', 'device', 'inputShape', 'inputDtype', 'outputShape'] as const;

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

  /**
   * Inference through the pipeline, without gradients: the first stage passes `input` (split along
   * dim 0 into micro-batches, which stream through the stages), the others null. Resolves on the
   * last stage with the output of the whole batch, on the others with null.
   */
  async forward(input: Tensor | null): Promise<Tensor | null> {
    const op = 'DistributedPipeline.forward';
    if (this.isFirst && !(input instanceof Tensor)) throw argError(op, `the first stage needs a Tensor input, got ${describe(input)}`);
    if (!this.isFirst && input !== null && input !== undefined)
      throw argError(op, `stage ${this.stageIndex} of ${this.stages} takes no input (only the first stage does); pass null`);
    const parts = input ? splitBatch(op, 'input', input, this.microBatches) : [];
    const g = this.group;
    const outs: Tensor[] = [];
    const sends: Promise<void>[] = [];
    // The micro-batch's input and output while this loop owns them (disposed if a step of it fails).
    let x: Tensor | null = null;
    let out: Tensor | null = null;
    try {
      for (let k = 0; k < this.microBatches; k++) {
        if (input) x = keep(input.narrow(0, parts[k][0], parts[k][1]).to(this.device));
        else {
          const header = keep(zeros([HEADER], { dtype: 'i64', device: this.device }));
          try {
            await g.recv(header, this.stageIndex - 1).wait();
            const [dtype, shape] = readHeader(await header.data(), {
              op,
              stage: this.stageIndex,
              from: this.stageIndex - 1,
              mode: 'forward',
              microBatches: this.microBatches,
              micro: k,
              declared: { inputShape: this.#inputShape, inputDtype: this.#inputDtype },
              rows: null,
              target: null,
            });
            x = keep(zeros(shape, { dtype, device: this.device }));
          } finally {
            header.dispose();
          }
          await g.recv(x, this.stageIndex - 1).wait();
        }
        const input_ = x;
        const y = noGrad(() => this.stage.forward(input_));
        if (!(y instanceof Tensor)) throw argError(op, `stage ${this.stageIndex}'s forward must return a Tensor, got ${describe(y)}`);
        out = keep(y);
        if (out !== x) x.dispose();
        x = null;
        if (this.isLast) outs.push(out);
        else {
          checkOutput(op, out, this.stageIndex, k, this.#outputShape);
          const header = keep(headerOf(out, this.device, { mode: 'forward', microBatches: this.microBatches, micro: k }));
          sends.push(settled(g.send(header, this.stageIndex + 1), header));
          sends.push(settled(g.send(out, this.stageIndex + 1), out));
        }
        out = null;
        await ready(this.device);
      }
      await Promise.all(sends);
      if (!this.isLast) return null;
      const all = keep(noGrad(() => cat(outs, 0)));
      for (const o of outs) o.dispose();
      return all;
    } catch (e) {
      x?.dispose();
      out?.dispose();
      for (const o of outs) o.dispose();
      this.group.destroy();
      throw e;
    }
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
