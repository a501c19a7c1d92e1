/** Shared pieces of the tensor-parallel layers: size checks and slicing the unsplit layer's weights. */
import type { Tensor } from '../../tensor';
import { noGrad } from '../../dispatch/grad_mode';
import { flockError } from '../../errors';
import { type Parameter, ownParameter } from '../../nn/parameter';

/** `n / parts`, or ERR_SHAPE naming the layer, the size and the group when it does not divide. */
export function split(op: string, name: string, n: number, parts: number): number {
  if (n % parts !== 0) throw flockError('ERR_SHAPE', op, `${name} ${n} must be divisible by the tensor-parallel group size ${parts}`);
  return n / parts;
}

/** Part `rank` of `parts` equal parts of `full` along `dim`, as a parameter with its own storage. */
export function shardParameter(full: Tensor, dim: number, rank: number, parts: number): Parameter {
  const n = full.shape[dim] / parts;
  return ownParameter(
    noGrad(() =>
      full
        .narrow(dim, rank * n, n)
        .contiguous()
        .clone(),
    ),
  );
}

/** A copy of `full` as a parameter with its own storage (a replicated weight). */
export function copyParameter(full: Tensor): Parameter {
  return ownParameter(noGrad(() => full.detach().clone()));
}
