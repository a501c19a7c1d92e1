/** A recorded operation: its differentiable inputs and how to map the output's gradient to theirs. */
import type { Tensor } from '../tensor';
import { isGradEnabled } from './grad_mode';

export type BackwardFn = (grad: Tensor) => (Tensor | null)[];

export class Node {
  constructor(
    readonly name: string,
    readonly inputs: Tensor[],
    readonly backward: BackwardFn,
  ) {}
}

/**
 * Attaches a graph node to `out` when grad mode is on and any input requires grad. `backward`
 * returns one gradient (or null) per input, in order, already reduced to each input's shape.
 */
export function record(out: Tensor, name: string, inputs: Tensor[], backward: BackwardFn): Tensor {
  if (!isGradEnabled() || !inputs.some((t) => t.requiresGrad)) return out;
  out.requiresGrad = true;
  out.gradFn = new Node(name, inputs, backward);
  return out;
}
