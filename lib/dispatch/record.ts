/** A recorded operation: its differentiable inputs and how to map the output's gradient to theirs. */
import type { Tensor } from '../tensor';
import { isGradEnabled } from './grad_mode';
import { flockError } from '../errors';
import { type VersionCounter, versionOf } from './version';

/**
 * The gradients of a node's inputs given its output's. `into`, when the engine passes it, holds for
 * some inputs (leaves) the `.grad` their gradient will be added to: a backward may add input i's
 * gradient into `into[i]` itself, in place, and return `into[i]` for it to say so.
 */
export type BackwardFn = (grad: Tensor, into?: readonly (Tensor | null)[]) => (Tensor | null)[];

/** A tensor a node may read in backward, and the version of its storage when it was recorded. */
interface Saved {
  readonly counter: VersionCounter;
  readonly version: number;
  readonly what: string;
}

function savedOf(t: Tensor, role: string): Saved {
  const counter = versionOf(t);
  return { counter, version: counter.value, what: `${role}, shape [${t.shape.join(',')}]` };
}

export class Node {
  #inputs: Tensor[];
  #backward: BackwardFn | null;
  // Backward closures do not declare what they capture, so every input (also the edge to its
  // history) and the output count as saved, unless the op says its closure never reads its output
  // (`savesOutput: false`): stricter than PyTorch for ops that save nothing (add, sum), never
  // silently wrong.
  #saved: Saved[] | null;

  constructor(
    readonly name: string,
    inputs: Tensor[],
    backward: BackwardFn,
    output?: Tensor,
    also?: readonly Tensor[],
  ) {
    this.#inputs = inputs;
    this.#backward = backward;
    const saved = inputs.map((t, i) => savedOf(t, `input ${i}`));
    if (output) saved.push(savedOf(output, 'output'));
    if (also) for (const t of also) saved.push(savedOf(t, 'index'));
    this.#saved = saved;
  }

  /** The tensors this node maps gradients to; empty once the node is released. */
  get inputs(): readonly Tensor[] {
    return this.#inputs;
  }

  /** Whether backward has run through this node and freed what it saved (no retainGraph). */
  get released(): boolean {
    return this.#backward === null;
  }

  /**
   * Throws ERR_AUTOGRAD when this node cannot run backward: it was released by an earlier
   * backward, or a tensor it saved has been written in place since it was recorded.
   */
  check(): void {
    if (this.#backward === null || this.#saved === null)
      throw flockError(
        'ERR_AUTOGRAD',
        'backward',
        `trying to backward through the graph a second time: ${this.name} already ran backward and freed the tensors it saved; ` +
          'pass { retainGraph: true } to the first backward() to keep them',
      );
    for (const s of this.#saved) {
      if (s.counter.value === s.version) continue;
      throw flockError(
        'ERR_AUTOGRAD',
        'backward',
        `a tensor saved by ${this.name} for backward was modified in place by ${s.counter.op} (${s.what}: version ${s.counter.value}, saved at ${s.version}); ` +
          'modify a clone() instead, or make the change before the forward pass',
      );
    }
  }

  /** The gradients of the inputs, given the output's; see {@link check} and {@link BackwardFn}. */
  backward(grad: Tensor, into?: readonly (Tensor | null)[]): (Tensor | null)[] {
    this.check();
    return this.#backward!(grad, into);
  }

  /** Drops the backward closure and the inputs, so what only this graph held can be freed. */
  release(): void {
    this.#backward = null;
    this.#saved = null;
    this.#inputs = [];
  }
}

/**
 * Attaches a graph node to `out` when grad mode is on and any input requires grad. `backward`
 * returns one gradient (or null) per input, in order, already reduced to each input's shape.
 */
export function record(out: Tensor, name: string, inputs: Tensor[], backward: BackwardFn, options?: RecordOptions): Tensor {
  if (!isGradEnabled() || !anyRequiresGrad(inputs)) return out;
  out.requiresGrad = true;
  out.gradFn = new Node(name, inputs, backward, options?.savesOutput === false ? undefined : out, options?.saves);
  return out;
}

function anyRequiresGrad(inputs: Tensor[]): boolean {
  for (let i = 0; i < inputs.length; i++) if (inputs[i].requiresGrad) return true;
  return false;
}

/**
 * Whether an op of inputs `a` (and `b`) is recorded: grad mode is on and an input requires grad.
 * Ops check it before building their backward closure, so an op outside autograd allocates none.
 */
export function recording(a: Tensor, b?: Tensor): boolean {
  return isGradEnabled() && (a.requiresGrad || b?.requiresGrad === true);
}

/** What {@link record} may be told about an op's backward closure. */
export interface RecordOptions {
  /**
   * False when the closure never reads the op's output, so the output may later be modified in
   * place (add_, mul_, ...) without invalidating this node (default true).
   */
  savesOutput?: boolean;
  /**
   * Tensors outside `inputs` that the closure reads (index tensors: the op's own index or an
   * indices output), checked as saved: writing one in place before backward makes it throw.
   */
  saves?: readonly Tensor[];
}
