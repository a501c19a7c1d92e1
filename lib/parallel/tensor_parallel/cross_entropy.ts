/**
 * Cross-entropy over logits whose class dimension is split across the group (the output of a
 * ColumnParallelLinear without gatherOutput, e.g. a vocabulary-parallel LM head), without
 * gathering the logits: the max, the sum of exponentials and the target's logit are reduced over
 * the group (three small allreduces of one value per row). The reductions are reduceFromParallel,
 * whose backward is the identity, so each rank's gradient is its slice of softmax − onehot and
 * backward needs no communication.
 */
import type { Tensor } from '../../tensor';
import type { ProcessGroup } from '../../distributed/process_group';
import { noGrad } from '../../dispatch/grad_mode';
import { logicalAnd, logicalNot, logicalOr, where } from '../../ops/elementwise';
import { checkOptions, flockError } from '../../errors';
import { isFloating } from '../../dtype';
import { checkChoice, checkNumber } from '../../validate';
import { checkGroup, reduceFromParallel } from './mappings';

export interface VocabParallelCrossEntropyOptions {
  /** The group the class dimension is split over (required). */
  group: ProcessGroup;
  /** 'mean' (over targets that are not ignoreIndex, as PyTorch), 'sum' or 'none' (default 'mean'). */
  reduction?: 'mean' | 'sum' | 'none';
  /** Targets equal to this contribute neither loss nor gradient (default -100). */
  ignoreIndex?: number;
  /** Mixes the target with the uniform distribution over all classes, as PyTorch (default 0). */
  labelSmoothing?: number;
}

const OP = 'parallel.tensor.vocabParallelCrossEntropy';

/**
 * cross_entropy(cat(logits of every rank, -1), target) for `logits` [..., C / size] (this rank's
 * classes [rank·C/size, (rank+1)·C/size)) and integer `target` [...] of global class indices.
 * Class weights are not supported (passing them is an error).
 */
export function vocabParallelCrossEntropy(logits: Tensor, target: Tensor, options: VocabParallelCrossEntropyOptions): Tensor {
  const o = checkOptions(OP, options, ['group', 'reduction', 'ignoreIndex', 'labelSmoothing']);
  const group = checkGroup(OP, o.group);
  const reduction = checkChoice(OP, 'reduction', o.reduction ?? 'mean', ['mean', 'sum', 'none'] as const);
  const ignoreIndex = checkNumber(OP, 'ignoreIndex', o.ignoreIndex ?? -100, { integer: true });
  const smoothing = checkNumber(OP, 'labelSmoothing', o.labelSmoothing ?? 0, { min: 0, max: 1 });
  if (typeof logits !== 'object' || logits === null || !('dtype' in logits) || !isFloating(logits.dtype))
    throw flockError('ERR_DTYPE', OP, 'logits must be a floating tensor');
  if (typeof target !== 'object' || target === null || !('dtype' in target) || (target.dtype !== 'i64' && target.dtype !== 'i32'))
    throw flockError('ERR_DTYPE', OP, 'target must be an i64 or i32 tensor of class indices');
  const lead = logits.shape.slice(0, -1);
  if (logits.ndim < 1 || target.ndim !== lead.length || target.shape.some((s, i) => s !== lead[i]))
    throw flockError(
      'ERR_SHAPE',
      OP,
      `target [${target.shape.join(', ')}] must have the shape of logits [${logits.shape.join(', ')}] without its last (class) dimension`,
    );
  const part = logits.shape[logits.ndim - 1];
  const classes = part * group.size;
  const start = group.rank * part;
  const t = target.to('i64');
  const ignored = t.eq(ignoreIndex);
  // The max is a constant shift (it cancels in the loss), so it carries no gradient.
  const rowMax = noGrad(() => logits.detach().max([-1], true).contiguous().clone());
  if (group.size > 1) group.allReduce(rowMax, { op: 'max', ordered: true });
  const shifted = logits.sub(rowMax);
  const outside = logicalOr(t.lt(start), t.ge(start + part));
  // Another rank's classes and ignored targets pick class 0 and are zeroed. A target outside
  // [0, classes) that is not ignoreIndex keeps target − start, outside this rank's classes too, so
  // the gather fails on every rank (ERR_INDEX at the next sync point) and the collectives stay in step.
  const bad = logicalAnd(logicalNot(ignored), logicalOr(t.lt(0), t.ge(classes)));
  const local = where(logicalAnd(outside, logicalNot(bad)), 0, t.sub(start)).to('i64');
  const picked = shifted.gather(-1, local.unsqueeze(-1)).squeeze(-1).maskedFill(outside, 0);
  const targetLogit = reduceFromParallel(picked, group);
  const sumExp = reduceFromParallel(shifted.exp().sum([-1]), group);
  const logZ = sumExp.log();
  let perRow = logZ.sub(targetLogit);
  if (smoothing > 0) {
    // −mean over all classes of log p = log Z − (Σ shifted logits) / C; the sum is reduced like the others.
    const uniform = logZ.sub(reduceFromParallel(shifted.sum([-1]), group).div(classes));
    perRow = perRow.mul(1 - smoothing).add(uniform.mul(smoothing));
  }
  const loss = perRow.maskedFill(ignored, 0);
  if (reduction === 'none') return loss;
  if (reduction === 'sum') return loss.sum();
  return loss.sum().div(logicalNot(ignored).sum().to(loss.dtype));
}
