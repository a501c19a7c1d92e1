/**
 * The conjugate operators of Megatron-LM's tensor parallelism, as autograd functions over one
 * process group:
 *
 * | operator | forward | backward |
 * |---|---|---|
 * | copyToParallel (f) | identity | allreduce (sum) |
 * | reduceFromParallel (g) | allreduce (sum) | identity |
 * | scatterToParallel | this rank's slice of the last dim | allgather along the last dim |
 * | gatherFromParallel | allgather along the last dim | this rank's slice |
 *
 * Every collective is ordered (`{ ordered: true }`): the work queued on the tensors' device after it
 * waits for it inside the device's stream, so each operator returns its result at once, the next op
 * uses it without awaiting the Work, and the backward functions recorded here run inside the
 * ordinary autograd engine (`loss.backward()`). A failed collective fails the ops queued after it:
 * the error reaches the next sync point (`data()`, `item()`). The Works are never awaited; Work
 * attaches its own handler, so they cannot become unhandled rejections.
 */
import type { Tensor } from '../../tensor';
import { record } from '../../dispatch/record';
import { zeros } from '../../ops/creation';
import { noGrad } from '../../dispatch/grad_mode';
import { isFloating } from '../../dtype';
import { flockError } from '../../errors';
import type { ProcessGroup } from '../../distributed/process_group';

function checkTensor(op: string, x: unknown): Tensor {
  if (typeof x !== 'object' || x === null || !('handle' in x) || !('shape' in x))
    throw flockError('ERR_ARG', op, 'the input must be a Tensor');
  return x as Tensor;
}

/** @internal The group a layer or operator runs over, checked. */
export function checkGroup(op: string, group: unknown): ProcessGroup {
  if (typeof group !== 'object' || group === null || !('allReduce' in group) || !('size' in group) || !('rank' in group))
    throw flockError('ERR_ARG', op, "group must be a ProcessGroup (e.g. mesh.group('tp') or the group initProcessGroup returned)");
  return group as ProcessGroup;
}

/** A contiguous copy with its own storage, for collectives that write in place. */
const ownCopy = (x: Tensor): Tensor => noGrad(() => x.contiguous().clone());

/** `x` summed over the group, in a buffer of its own (a collective writes in place). */
function allReduceSum(x: Tensor, group: ProcessGroup): Tensor {
  const y = ownCopy(x);
  if (group.size > 1) group.allReduce(y, { ordered: true });
  return y;
}

/** Every rank's `x` concatenated along the last dimension, in group-rank order. */
function allGatherLast(x: Tensor, group: ProcessGroup): Tensor {
  if (group.size === 1) return ownCopy(x);
  const src = ownCopy(x);
  const out = noGrad(() => zeros([group.size, ...x.shape], { dtype: x.dtype, device: x.device }));
  group.allGather(out, src, { ordered: true });
  const n = x.ndim;
  // [size, ..., d] → [..., size, d] → [..., size·d]
  return noGrad(() =>
    out
      .permute([...Array.from({ length: n - 1 }, (_, i) => i + 1), 0, n])
      .contiguous()
      .reshape([...x.shape.slice(0, -1), group.size * x.shape[n - 1]]),
  );
}

function lastDimSlice(op: string, x: Tensor, group: ProcessGroup): Tensor {
  const d = x.shape[x.ndim - 1];
  if (x.ndim === 0 || d % group.size !== 0)
    throw flockError('ERR_SHAPE', op, `the last dimension of [${x.shape.join(', ')}] must be divisible by the group size ${group.size}`);
  const part = d / group.size;
  return x.narrow(x.ndim - 1, group.rank * part, part);
}

/** f: identity in forward; the gradient is summed over the group in backward. */
export function copyToParallel(x: Tensor, group: ProcessGroup): Tensor {
  const op = 'parallel.tensor.copyToParallel';
  checkTensor(op, x);
  checkGroup(op, group);
  return record(x.detach(), 'copyToParallel', [x], (g) => [allReduceSum(g, group)], { savesOutput: false });
}

/** g: sums `x` over the group in forward; the gradient passes unchanged in backward. */
export function reduceFromParallel(x: Tensor, group: ProcessGroup): Tensor {
  const op = 'parallel.tensor.reduceFromParallel';
  checkTensor(op, x);
  checkGroup(op, group);
  if (!isFloating(x.dtype) && x.requiresGrad) throw flockError('ERR_DTYPE', op, `a gradient needs a floating dtype, got ${x.dtype}`);
  const y = allReduceSum(x, group);
  return record(y, 'reduceFromParallel', [x], (g) => [g], { savesOutput: false });
}

/** Keeps this rank's slice of the last dimension; the gradient is all-gathered in backward. */
export function scatterToParallel(x: Tensor, group: ProcessGroup): Tensor {
  const op = 'parallel.tensor.scatterToParallel';
  checkTensor(op, x);
  checkGroup(op, group);
  const y = noGrad(() => lastDimSlice(op, x, group).contiguous().clone());
  return record(y, 'scatterToParallel', [x], (g) => [allGatherLast(g, group)], { savesOutput: false });
}

/** Concatenates every rank's `x` along the last dimension; the gradient is sliced back in backward. */
export function gatherFromParallel(x: Tensor, group: ProcessGroup): Tensor {
  const op = 'parallel.tensor.gatherFromParallel';
  checkTensor(op, x);
  checkGroup(op, group);
  const y = allGatherLast(x, group);
  return record(y, 'gatherFromParallel', [x], (g) => [lastDimSlice(op, g, group).contiguous()], { savesOutput: false });
}
