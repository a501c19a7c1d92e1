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
 * Operators that communicate in forward are async; those that communicate in backward record a
 * CommNode, run by {@link backward}.
 */
import type { Tensor } from '../../tensor';
import { record } from '../../autograd/node';
import { zeros } from '../../ops/creation';
import { noGrad } from '../../autograd/grad_mode';
import { isFloating } from '../../dtype';
import { flockError } from '../../errors';
import type { ProcessGroup } from '../../distributed/process_group';
import { recordComm } from './backward';

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

async function allReduceSum(x: Tensor, group: ProcessGroup): Promise<Tensor> {
  const y = ownCopy(x);
  if (group.size > 1) await group.allReduce(y).wait();
  return y;
}

/** Every rank's `x` concatenated along the last dimension, in group-rank order. */
async function allGatherLast(x: Tensor, group: ProcessGroup): Promise<Tensor> {
  if (group.size === 1) return ownCopy(x);
  const src = ownCopy(x);
  const out = zeros([group.size, ...x.shape], { dtype: x.dtype, device: x.device });
  await group.allGather(out, src).wait();
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
  const y = x.detach();
  return recordComm(y, 'copyToParallel', x, (g) => allReduceSum(g, group));
}

/** g: sums `x` over the group in forward; the gradient passes unchanged in backward. */
export async function reduceFromParallel(x: Tensor, group: ProcessGroup): Promise<Tensor> {
  const op = 'parallel.tensor.reduceFromParallel';
  checkTensor(op, x);
  checkGroup(op, group);
  if (!isFloating(x.dtype) && x.requiresGrad) throw flockError('ERR_DTYPE', op, `a gradient needs a floating dtype, got ${x.dtype}`);
  const y = await allReduceSum(x, group);
  return record(y, 'reduceFromParallel', [x], (g) => [g], { savesOutput: false });
}

/** Keeps this rank's slice of the last dimension; the gradient is all-gathered in backward. */
export function scatterToParallel(x: Tensor, group: ProcessGroup): Tensor {
  const op = 'parallel.tensor.scatterToParallel';
  checkTensor(op, x);
  checkGroup(op, group);
  const y = noGrad(() => lastDimSlice(op, x, group).contiguous().clone());
  return recordComm(y, 'scatterToParallel', x, (g) => allGatherLast(g, group));
}

/** Concatenates every rank's `x` along the last dimension; the gradient is sliced back in backward. */
export async function gatherFromParallel(x: Tensor, group: ProcessGroup): Promise<Tensor> {
  const op = 'parallel.tensor.gatherFromParallel';
  checkTensor(op, x);
  checkGroup(op, group);
  const y = await allGatherLast(x, group);
  return record(y, 'gatherFromParallel', [x], (g) => [lastDimSlice(op, g, group).contiguous()], { savesOutput: false });
}
