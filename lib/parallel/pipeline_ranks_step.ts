/**
 * One step of a DistributedPipeline on one rank: its micro-batches, the activations it holds, and
 * its messages, posted in the plan's global order (pipeline_ranks_plan.ts). Each activation goes
 * behind a header with its dtype and shape, checked by the receiver.
 */
import { Tensor } from '../tensor';
import { keep } from '../memory';
import { enableGrad } from '../dispatch/grad_mode';
import { tensor, zeros } from '../ops/creation';
import { DTYPES, type CanonicalDType } from '../dtype';
import { argError, describe, flockError } from '../errors';
import type { Work } from '../distributed/work';
import { DistributedDataParallel } from './ddp';
import { graphBetween } from './pipeline';
import type { Message } from './pipeline_ranks_plan';
import type { Action } from './pipeline_schedule';
import type { DistributedPipeline } from './pipeline_ranks';

interface Live {
  input: Tensor;
  /** The stage's output (the weighted loss on the last stage). */
  output: Tensor;
}

interface Inbox {
  tensor: Tensor;
  done: Promise<void>;
}

/**
 * Header of an activation (i64): dtype index, ndim, what the sender runs (MODES index), its
 * micro-batch count, this micro-batch's index, then up to MAX_DIMS sizes.
 */
const MAX_DIMS = 8;
export const HEADER = 5 + MAX_DIMS;
/** What a stage runs: a training step with either schedule, or forward() (inference). */
export type Mode = 'gpipe' | '1f1b' | 'forward';
const MODES: readonly Mode[] = ['gpipe', '1f1b', 'forward'];

/** The sender's side of a header: what it runs, and which micro-batch this is. */
export interface HeaderTag {
  mode: Mode;
  microBatches: number;
  micro: number;
}

const shapeText = (s: readonly number[]) => `[${s.join(', ')}]`;

export interface Declared {
  inputShape: number[] | null;
  inputDtype: CanonicalDType | null;
  outputShape: number[] | null;
  lastBackward: number;
}

/** One step on one rank: its micro-batches, what it holds, and its messages in flight. */
export class StepRun {
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
    for (const [name, t] of [
      ['input', input],
      ['target', target],
    ] as const) {
      if (!t) continue;
      this.#parts = splitBatch(op, name, t, p.microBatches);
      this.#batch = t.shape[0];
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
          checkOutput(op, out, p.stageIndex, k, this.#declared.outputShape);
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
        const header = keep(headerOf(t, p.device, { mode: p.schedule, microBatches: p.microBatches, micro: m.micro }));
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
        [dtype, shape] = readHeader(await header.data(), {
          op: this.#op,
          stage: this.#stage,
          from: m.from,
          mode: p.schedule,
          microBatches: p.microBatches,
          micro: m.micro,
          declared: this.#declared,
          rows: this.#pipe.isLast ? this.#parts[m.micro][1] : null,
          target: this.#target,
        });
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
    this.#sends.push(settled(w, t));
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
}

/** What a received header is checked against. */
export interface HeaderCheck extends HeaderTag {
  op: string;
  stage: number;
  from: number;
  declared: Pick<Declared, 'inputShape' | 'inputDtype'>;
  /** On the last stage in training, the rows of this micro-batch's target part. */
  rows: number | null;
  target: Tensor | null;
}

/** The dtype and shape a header announces, checked against what this stage declared or needs. */
export function readHeader(data: ArrayLike<number | bigint>, c: HeaderCheck): [CanonicalDType, number[]] {
  const v = Array.from(data, Number);
  const dtype = DTYPES[v[0]];
  const ndim = v[1];
  const mode = MODES[v[2]];
  const shape = v.slice(5, 5 + ndim);
  if (!dtype || !mode || !Number.isInteger(ndim) || ndim < 1 || ndim > MAX_DIMS || shape.some((d) => !Number.isInteger(d) || d < 0))
    throw flockError(
      'ERR_COLLECTIVE_MISMATCH',
      c.op,
      `stage ${c.stage} received from stage ${c.from} a header that does not describe a tensor ([${v.join(', ')}]); is every rank of the group running this pipeline?`,
    );
  const runs = (m: Mode, n: number) => (m === 'forward' ? `forward() with ${n} micro-batches` : `step() with ${m} and ${n} micro-batches`);
  if (mode !== c.mode || v[3] !== c.microBatches || v[4] !== c.micro)
    throw flockError(
      'ERR_COLLECTIVE_MISMATCH',
      c.op,
      `stage ${c.stage} runs ${runs(c.mode, c.microBatches)} and expects micro-batch ${c.micro}, but stage ${c.from} runs ` +
        `${runs(mode, v[3])} and sent micro-batch ${v[4]}; every stage must run the same call with the same microBatches and schedule`,
    );
  const sent = `stage ${c.from} sent micro-batch ${c.micro} as ${shapeText(shape)} ${dtype}`;
  const want = c.declared.inputShape;
  if (want && !sameDims(shape.slice(1), want))
    throw flockError('ERR_SHAPE', c.op, `stage ${c.stage} declares its input [*, ${want.join(', ')}], but ${sent}`);
  const wantDtype = c.declared.inputDtype;
  if (wantDtype && wantDtype !== dtype)
    throw flockError('ERR_DTYPE', c.op, `stage ${c.stage} declares its input ${wantDtype}, but ${sent}`);
  if (c.rows !== null && shape[0] !== c.rows)
    throw flockError(
      'ERR_SHAPE',
      c.op,
      `the last stage's target ${shapeText(c.target!.shape)} gives micro-batch ${c.micro} ${c.rows} rows, but ${sent}; ` +
        'the first and last stages must be given batches of the same size',
    );
  return [dtype, shape];
}

/** [start, rows] of each of `m` micro-batches of `t` (⌈B/m⌉ rows each, the last smaller); none may be empty. */
export function splitBatch(op: string, name: string, t: Tensor, m: number): (readonly [number, number])[] {
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
  return parts;
}

/** Checks a stage's output before it is sent: 1 to MAX_DIMS dimensions, and the declared shape if any. */
export function checkOutput(op: string, out: Tensor, stage: number, k: number, declared: number[] | null): void {
  if (out.ndim === 0 || out.ndim > MAX_DIMS)
    throw flockError(
      'ERR_SHAPE',
      op,
      `stage ${stage}'s output for micro-batch ${k} is ${shapeText(out.shape)}; what goes to the next stage must have 1 to ${MAX_DIMS} dimensions, the first the micro-batch`,
    );
  if (declared && !sameDims(out.shape.slice(1), declared))
    throw flockError(
      'ERR_SHAPE',
      op,
      `stage ${stage} declares its output [*, ${declared.join(', ')}] but its forward made ${shapeText(out.shape)} for micro-batch ${k}`,
    );
}

/**
 * Resolves when `w` is done and frees `t`, which it read. Marked as handled: finish() awaits it,
 * but a step that fails earlier never gets there, and its rejection must not end the process.
 */
export function settled(w: Work, t: Tensor): Promise<void> {
  const done = w.wait().finally(() => t.dispose());
  done.catch(() => {});
  return done;
}

function whyNeeds(name: string, p: DistributedPipeline): string {
  return name === 'input' ? 'is the first stage and needs' : `is the last of ${p.stages} stages and needs`;
}

export function headerOf(t: Tensor, device: string, tag: HeaderTag): Tensor {
  const v = new BigInt64Array(HEADER);
  v[0] = BigInt(DTYPES.indexOf(t.dtype as CanonicalDType));
  v[1] = BigInt(t.ndim);
  v[2] = BigInt(MODES.indexOf(tag.mode));
  v[3] = BigInt(tag.microBatches);
  v[4] = BigInt(tag.micro);
  t.shape.forEach((d, i) => {
    v[5 + i] = BigInt(d);
  });
  return tensor(v, { device });
}

export function perSample(op: string, name: string, v: unknown): number[] {
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
