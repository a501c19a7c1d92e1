/**
 * Losses. Cross-entropy with class indices runs the fused native log-softmax + NLL kernel (the
 * log-probabilities are never stored); the others are compositions of differentiable ops.
 */
import { native } from '../../native';
import type { Tensor } from '../../tensor';
import { record } from '../../autograd/node';
import { checkTensor, rangeError, shapeStr, typeError, wrap } from '../../ops/util';
import { isFloating } from '../../dtype';
import { log1p, where } from '../../ops/elementwise';

export type Reduction = 'mean' | 'sum' | 'none';

function checkReduction(op: string, r: unknown): Reduction {
  if (r !== 'mean' && r !== 'sum' && r !== 'none') throw typeError(op, `reduction must be 'mean', 'sum' or 'none', got ${String(r)}`);
  return r;
}

function reduce(loss: Tensor, r: Reduction): Tensor {
  return r === 'none' ? loss : r === 'sum' ? loss.sum() : loss.mean();
}

function sameShape(op: string, a: Tensor, b: Tensor): void {
  if (a.shape.length !== b.shape.length || a.shape.some((s, i) => s !== b.shape[i]))
    throw rangeError(op, `input ${shapeStr(a.shape)} and target ${shapeStr(b.shape)} must have the same shape`);
}

export interface CrossEntropyOptions {
  reduction?: Reduction;
  /** Per-class weights [C] for class-index targets. */
  weight?: Tensor | null;
  ignoreIndex?: number;
  labelSmoothing?: number;
}

/** Moves the class dim (1) last and flattens: [N, C, d…] → [N·d…, C]. */
function rowsOf(x: Tensor): Tensor {
  if (x.ndim === 2) return x;
  const perm = [0, ...Array.from({ length: x.ndim - 2 }, (_, i) => i + 2), 1];
  return x.permute(perm).reshape([-1, x.shape[1]]);
}

/**
 * Cross-entropy between logits [N, C] (or [N, C, d…]) and either class indices [N] (or [N, d…],
 * i64/i32) or class probabilities with the logits' shape.
 */
export function crossEntropy(input: Tensor, target: Tensor, options: CrossEntropyOptions = {}): Tensor {
  checkTensor('crossEntropy', 'input', input);
  checkTensor('crossEntropy', 'target', target);
  const reduction = checkReduction('crossEntropy', options.reduction ?? 'mean');
  const ignoreIndex = options.ignoreIndex ?? -100;
  const eps = options.labelSmoothing ?? 0;
  if (!(eps >= 0 && eps <= 1)) throw rangeError('crossEntropy', `labelSmoothing must be in [0, 1], got ${eps}`, 'ERR_RANGE');
  if (input.ndim < 2) throw rangeError('crossEntropy', `input must be [N, C] or [N, C, d…], got ${shapeStr(input.shape)}`);
  if (isFloating(target.dtype)) return crossEntropyProbs(input, target, eps, reduction);
  const expected = [input.shape[0], ...input.shape.slice(2)];
  if (target.ndim !== expected.length || target.shape.some((s, i) => s !== expected[i]))
    throw rangeError('crossEntropy', `target ${shapeStr(target.shape)} must be ${shapeStr(expected)} for input ${shapeStr(input.shape)}`);
  const x = rowsOf(input);
  const t = target.reshape([-1]);
  if (options.weight) return weighted(x, t, options.weight, ignoreIndex, eps, reduction, expected);
  const rows = nllRows(x, t, ignoreIndex, eps);
  if (reduction === 'none') return rows.reshape(expected);
  if (reduction === 'sum') return rows.sum();
  // The mean runs over targets that are not ignored, as PyTorch's.
  return rows.sum().div(t.ne(ignoreIndex).sum().to(rows.dtype));
}

/**
 * Class-weighted cross-entropy, as PyTorch's: each row's NLL is scaled by its target's weight and
 * the smoothing term by every class's weight; the mean divides by the summed target weights.
 */
function weighted(x: Tensor, t: Tensor, weight: Tensor, ignoreIndex: number, eps: number, reduction: Reduction, shape: number[]): Tensor {
  const classes = x.shape[1];
  if (weight.ndim !== 1 || weight.shape[0] !== classes) throw rangeError('crossEntropy', `weight must be [${classes}], got ${shapeStr(weight.shape)}`);
  const w = weight.to(x.dtype);
  const valid = t.ne(ignoreIndex);
  const validF = valid.to(x.dtype);
  const safe = t.mul(valid.to(t.dtype));  // ignored rows look up class 0, then get weight 0
  const wy = w.indexSelect(0, safe).mul(validF);
  let rows = nllRows(x, t, ignoreIndex, 0).mul(wy);
  if (eps > 0) {
    const smooth = x.logSoftmax(1).mul(w).sum(1).neg().mul(validF);
    rows = rows.mul(1 - eps).add(smooth.mul(eps / classes));
  }
  if (reduction === 'none') return rows.reshape(shape);
  if (reduction === 'sum') return rows.sum();
  return rows.sum().div(wy.sum());
}

/** Per-row loss of the fused native log-softmax + NLL kernel (0 on ignored rows). */
function nllRows(x: Tensor, t: Tensor, ignoreIndex: number, eps: number): Tensor {
  const [lossH, lseH] = native.crossEntropy(x.handle, t.handle, ignoreIndex, eps);
  const lse = wrap(lseH);
  return record(wrap(lossH), 'crossEntropy', [x], (g) => [wrap(native.crossEntropyBackward(x.handle, t.handle, lse.handle, g.handle, ignoreIndex, eps))]);
}

function crossEntropyProbs(input: Tensor, target: Tensor, eps: number, reduction: Reduction): Tensor {
  sameShape('crossEntropy', input, target);
  const c = input.shape[1];
  const p = eps > 0 ? target.mul(1 - eps).add(eps / c) : target;
  const loss = p.mul(input.logSoftmax(1)).sum(1).neg();
  return reduce(loss, reduction);
}

/** Negative log-likelihood of log-probabilities [N, C] (or [N, C, d…]) at class indices. */
export function nllLoss(input: Tensor, target: Tensor, options: { reduction?: Reduction; ignoreIndex?: number } = {}): Tensor {
  checkTensor('nllLoss', 'input', input);
  checkTensor('nllLoss', 'target', target);
  const reduction = checkReduction('nllLoss', options.reduction ?? 'mean');
  const ignoreIndex = options.ignoreIndex ?? -100;
  const x = rowsOf(input);
  const t = target.reshape([-1]);
  if (t.shape[0] !== x.shape[0]) throw rangeError('nllLoss', `target ${shapeStr(target.shape)} does not match input ${shapeStr(input.shape)}`);
  const keepMask = t.ne(ignoreIndex);
  const idx = keepMask.to(t.dtype).mul(t).unsqueeze(1);  // ignored rows read class 0, then masked out
  const picked = x.gather(1, idx).squeeze(1).neg().mul(keepMask.to(x.dtype));
  if (reduction === 'none') return picked.reshape([input.shape[0], ...input.shape.slice(2)]);
  if (reduction === 'sum') return picked.sum();
  return picked.sum().div(keepMask.sum().to(x.dtype));
}

export function mseLoss(input: Tensor, target: Tensor, options: { reduction?: Reduction } = {}): Tensor {
  sameShape('mseLoss', input, target);
  return reduce(input.sub(target).square(), checkReduction('mseLoss', options.reduction ?? 'mean'));
}

export function l1Loss(input: Tensor, target: Tensor, options: { reduction?: Reduction } = {}): Tensor {
  sameShape('l1Loss', input, target);
  return reduce(input.sub(target).abs(), checkReduction('l1Loss', options.reduction ?? 'mean'));
}

/** Huber-style loss: quadratic below `beta`, linear above. */
export function smoothL1Loss(input: Tensor, target: Tensor, options: { reduction?: Reduction; beta?: number } = {}): Tensor {
  sameShape('smoothL1Loss', input, target);
  const beta = options.beta ?? 1;
  const reduction = checkReduction('smoothL1Loss', options.reduction ?? 'mean');
  const d = input.sub(target).abs();
  if (beta === 0) return reduce(d, reduction);
  const quad = d.square().mul(0.5 / beta);
  const lin = d.sub(0.5 * beta);
  return reduce(where(d.lt(beta), quad, lin), reduction);
}

/** Binary cross-entropy on logits in the stable form max(x,0) − x·y + log(1 + e^−|x|). */
export function binaryCrossEntropyWithLogits(input: Tensor, target: Tensor, options: { reduction?: Reduction; posWeight?: Tensor } = {}): Tensor {
  sameShape('binaryCrossEntropyWithLogits', input, target);
  const reduction = checkReduction('binaryCrossEntropyWithLogits', options.reduction ?? 'mean');
  const softplusNeg = log1p(input.abs().neg().exp()).add(input.neg().relu());  // log(1 + e^−x)
  let loss: Tensor;
  if (options.posWeight) {
    // (1 − y)·x + (1 + (pw − 1)·y)·log(1 + e^−x)
    const w = options.posWeight.sub(1).mul(target).add(1);
    loss = target.neg().add(1).mul(input).add(w.mul(softplusNeg));
  } else {
    loss = target.neg().add(1).mul(input).add(softplusNeg);
  }
  return reduce(loss, reduction);
}
