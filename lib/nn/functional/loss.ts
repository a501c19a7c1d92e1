/**
 * Losses. Cross-entropy with class indices runs the fused native log-softmax + NLL kernel (the
 * log-probabilities are never stored); the others are compositions of differentiable ops.
 */
import { native } from '../../native';
import type { Tensor } from '../../tensor';
import { record } from '../../dispatch/record';
import { shapeStr, wrap } from '../../ops/util';
import { isFloating } from '../../dtype';
import { log1p, where } from '../../ops/elementwise';
import { checkOptions, dtypeError, flockError, shapeError } from '../../errors';
import { checkChoice, checkNumber, checkOptionalTensor } from '../../validate';
import { tensorArg } from './args';
import { autocastArgs } from '../../dispatch/autocast';

export type Reduction = 'mean' | 'sum' | 'none';
const REDUCTIONS: readonly Reduction[] = ['mean', 'sum', 'none'];

/** @internal */
export function reduce(loss: Tensor, r: Reduction): Tensor {
  return r === 'none' ? loss : r === 'sum' ? loss.sum() : loss.mean();
}

/** @internal Input and target of an element-wise loss: live tensors of one shape, the input floating. */
export function pairOf(op: string, input: unknown, target: unknown): [Tensor, Tensor] {
  [input, target] = autocastArgs(`nn.functional.${op}`, input, target);
  const a = tensorArg(op, 'input', input),
    b = tensorArg(op, 'target', target);
  if (a.shape.length !== b.shape.length || a.shape.some((s, i) => s !== b.shape[i]))
    throw shapeError(op, `input ${shapeStr(a.shape)} and target ${shapeStr(b.shape)} must have the same shape`);
  if (!isFloating(a.dtype)) throw dtypeError(op, `input must be a floating tensor, got ${a.dtype}`);
  if (a.device !== b.device) throw flockError('ERR_DEVICE', op, `input is on ${a.device}, target on ${b.device}`);
  // fl.tensor([[0, 1]]) is i64: integer targets are values here, compared in the input's dtype.
  return [a, b.dtype === a.dtype ? b : b.to(a.dtype)];
}

export interface CrossEntropyOptions {
  reduction?: Reduction;
  /** Per-class weights [C]. */
  weight?: Tensor | null;
  /** A class index whose targets contribute nothing (class-index targets only; default −100). */
  ignoreIndex?: number;
  labelSmoothing?: number;
}

export interface NLLLossOptions {
  reduction?: Reduction;
  /** Per-class weights [C]. */
  weight?: Tensor | null;
  ignoreIndex?: number;
}

export interface ReductionOptions {
  reduction?: Reduction;
}

export interface SmoothL1LossOptions extends ReductionOptions {
  /** Where the loss turns from quadratic to linear (≥ 0, default 1). */
  beta?: number;
}

export interface HuberLossOptions extends ReductionOptions {
  /** Where the loss turns from quadratic to linear (> 0, default 1). */
  delta?: number;
}

export interface BCEWithLogitsOptions extends ReductionOptions {
  /** Per-element rescaling of each term, broadcast against the input. */
  weight?: Tensor | null;
  /** Weight of positive examples, broadcast against the input (usually [C]). */
  posWeight?: Tensor | null;
}

/** @internal The options of each loss, checked as `op`; the loss layers check theirs once at construction. */
export function crossEntropyOptions(op: string, options: unknown) {
  const o = checkOptions(op, options as CrossEntropyOptions | undefined, ['reduction', 'weight', 'ignoreIndex', 'labelSmoothing']);
  return {
    reduction: checkChoice(op, 'reduction', o.reduction ?? 'mean', REDUCTIONS),
    weight: checkOptionalTensor(op, 'weight', o.weight),
    ignoreIndex: checkNumber(op, 'ignoreIndex', o.ignoreIndex ?? -100, { integer: true }),
    labelSmoothing: checkNumber(op, 'labelSmoothing', o.labelSmoothing ?? 0, { min: 0, max: 1 }),
  };
}

/** @internal */
export function nllLossOptions(op: string, options: unknown) {
  const o = checkOptions(op, options as NLLLossOptions | undefined, ['reduction', 'weight', 'ignoreIndex']);
  return {
    reduction: checkChoice(op, 'reduction', o.reduction ?? 'mean', REDUCTIONS),
    weight: checkOptionalTensor(op, 'weight', o.weight),
    ignoreIndex: checkNumber(op, 'ignoreIndex', o.ignoreIndex ?? -100, { integer: true }),
  };
}

/** @internal */
export function reductionOptions(op: string, options: unknown) {
  const o = checkOptions(op, options as ReductionOptions | undefined, ['reduction']);
  return { reduction: checkChoice(op, 'reduction', o.reduction ?? 'mean', REDUCTIONS) };
}

/** @internal */
export function smoothL1Options(op: string, options: unknown) {
  const o = checkOptions(op, options as SmoothL1LossOptions | undefined, ['reduction', 'beta']);
  return {
    reduction: checkChoice(op, 'reduction', o.reduction ?? 'mean', REDUCTIONS),
    beta: checkNumber(op, 'beta', o.beta ?? 1, { min: 0 }),
  };
}

/** @internal */
export function huberOptions(op: string, options: unknown) {
  const o = checkOptions(op, options as HuberLossOptions | undefined, ['reduction', 'delta']);
  return {
    reduction: checkChoice(op, 'reduction', o.reduction ?? 'mean', REDUCTIONS),
    delta: checkNumber(op, 'delta', o.delta ?? 1, { above: 0 }),
  };
}

/** @internal */
export function bceOptions(op: string, options: unknown) {
  const o = checkOptions(op, options as BCEWithLogitsOptions | undefined, ['reduction', 'weight', 'posWeight']);
  return {
    reduction: checkChoice(op, 'reduction', o.reduction ?? 'mean', REDUCTIONS),
    weight: checkOptionalTensor(op, 'weight', o.weight),
    posWeight: checkOptionalTensor(op, 'posWeight', o.posWeight),
  };
}

/** Moves the class dim (1) last and flattens: [N, C, d…] → [N·d…, C]. */
function rowsOf(x: Tensor): Tensor {
  if (x.ndim === 2) return x;
  const perm = [0, ...Array.from({ length: x.ndim - 2 }, (_, i) => i + 2), 1];
  return x.permute(perm).reshape([-1, x.shape[1]]);
}

/** Logits or log-probabilities [N, C] or [N, C, d…]: a live floating tensor of at least 2 dims. */
function classInput(op: string, input: unknown): Tensor {
  const x = tensorArg(op, 'input', input);
  if (x.ndim < 2) throw shapeError(op, `input must be [N, C] or [N, C, d…], got ${shapeStr(x.shape)}`);
  if (!isFloating(x.dtype)) throw dtypeError(op, `input must be a floating tensor of scores, got ${x.dtype}`);
  return x;
}

/** A per-class weight [C] for input `x`, on its device and in its dtype. */
function classWeight(op: string, weight: Tensor | null, x: Tensor): Tensor | null {
  if (!weight) return null;
  const c = x.shape[1];
  if (weight.ndim !== 1 || weight.shape[0] !== c)
    throw shapeError(op, `weight must be [${c}] (one per class), got ${shapeStr(weight.shape)}`);
  if (!isFloating(weight.dtype)) throw dtypeError(op, `weight must be a floating tensor, got ${weight.dtype}`);
  if (weight.device !== x.device) throw flockError('ERR_DEVICE', op, `weight is on ${weight.device}, input on ${x.device}`);
  return weight.dtype === x.dtype ? weight : weight.to(x.dtype);
}

/**
 * Class-index targets [N] or [N, d…] for input [N, C, d…]: i64 or i32, on the input's device.
 * `probsOk` says whether probabilities of the input's shape are the alternative (crossEntropy).
 */
function classTarget(op: string, target: unknown, x: Tensor, probsOk: boolean): Tensor {
  const t = tensorArg(op, 'target', target);
  const expected = [x.shape[0], ...x.shape.slice(2)];
  const how = `an integer class-index tensor (i64) of shape ${shapeStr(expected)}${probsOk ? ` or probabilities of the input's shape ${shapeStr(x.shape)}` : ''}`;
  if (t.dtype !== 'i64' && t.dtype !== 'i32')
    throw dtypeError(
      op,
      `target must be ${how}; got ${t.dtype} ${shapeStr(t.shape)}${isFloating(t.dtype) || t.dtype === 'u8' || t.dtype === 'bool' ? " — use target.to('i64') for class indices" : ''}`,
    );
  if (t.ndim !== expected.length || t.shape.some((s, i) => s !== expected[i]))
    throw shapeError(op, `target ${shapeStr(t.shape)} must be ${shapeStr(expected)} for input ${shapeStr(x.shape)}`);
  if (t.device !== x.device) throw flockError('ERR_DEVICE', op, `target is on ${t.device}, input on ${x.device}`);
  return t;
}

/**
 * Cross-entropy between logits [N, C] (or [N, C, d…]) and either class indices [N] (or [N, d…],
 * i64/i32) or class probabilities with the logits' shape (floating), as PyTorch's.
 */
export function crossEntropy(input: Tensor, target: Tensor, options: CrossEntropyOptions = {}): Tensor {
  return crossEntropyWith('crossEntropy', input, target, crossEntropyOptions('crossEntropy', options));
}

/** @internal crossEntropy with checked options, errors named `op`. */
export function crossEntropyWith(op: string, input: unknown, target: unknown, o: ReturnType<typeof crossEntropyOptions>): Tensor {
  [input, target] = autocastArgs('nn.functional.crossEntropy', input, target);
  const x0 = classInput(op, input);
  const t0 = tensorArg(op, 'target', target);
  const w = classWeight(op, o.weight, x0);
  if (isFloating(t0.dtype) && t0.ndim === x0.ndim) {
    if (t0.shape.some((s, i) => s !== x0.shape[i]))
      throw shapeError(op, `probability target ${shapeStr(t0.shape)} must have the input's shape ${shapeStr(x0.shape)}`);
    if (t0.device !== x0.device) throw flockError('ERR_DEVICE', op, `target is on ${t0.device}, input on ${x0.device}`);
    return crossEntropyProbs(x0, t0, w, o.labelSmoothing, o.reduction);
  }
  const t1 = classTarget(op, t0, x0, true);
  const expected = [x0.shape[0], ...x0.shape.slice(2)];
  const x = rowsOf(x0);
  const t = t1.reshape([-1]);
  const { ignoreIndex, labelSmoothing: eps, reduction } = o;
  if (w) return weighted(x, t, w, ignoreIndex, eps, reduction, expected);
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
  const w = weight;
  const valid = t.ne(ignoreIndex);
  const validF = valid.to(x.dtype);
  const safe = t.mul(valid.to(t.dtype)); // ignored rows look up class 0, then get weight 0
  // The fused kernel is queued first, so a target out of range fails naming crossEntropy.
  const nll = nllRows(x, t, ignoreIndex, 0);
  const wy = w.indexSelect(0, safe).mul(validF);
  let rows = nll.mul(wy);
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
  return record(
    wrap(lossH),
    'crossEntropy',
    [x],
    (g) => [wrap(native.crossEntropyBackward(x.handle, t.handle, lse.handle, g.handle, ignoreIndex, eps))],
    { savesOutput: false, saves: [t] },
  );
}

/**
 * Cross-entropy against class probabilities, as PyTorch's: −Σ_c w_c·p_c·log softmax(x)_c per row,
 * the smoothing mixed into the target; the mean divides by the number of rows (weights or not).
 */
function crossEntropyProbs(input: Tensor, target: Tensor, weight: Tensor | null, eps: number, reduction: Reduction): Tensor {
  const c = input.shape[1];
  let p = eps > 0 ? target.mul(1 - eps).add(eps / c) : target;
  if (weight) p = p.mul(weight.reshape([1, c, ...Array(input.ndim - 2).fill(1)]));
  const loss = p.mul(input.logSoftmax(1)).sum(1).neg();
  return reduce(loss, reduction);
}

/** Negative log-likelihood of log-probabilities [N, C] (or [N, C, d…]) at class indices. */
export function nllLoss(input: Tensor, target: Tensor, options: NLLLossOptions = {}): Tensor {
  return nllLossWith('nllLoss', input, target, nllLossOptions('nllLoss', options));
}

/** @internal nllLoss with checked options, errors named `op`. */
export function nllLossWith(op: string, input: unknown, target: unknown, o: ReturnType<typeof nllLossOptions>): Tensor {
  [input] = autocastArgs('nn.functional.nllLoss', input);
  const x0 = classInput(op, input);
  const t0 = classTarget(op, target, x0, false);
  const w = classWeight(op, o.weight, x0);
  const x = rowsOf(x0);
  const t = t0.reshape([-1]);
  const keepMask = t.ne(o.ignoreIndex);
  const keepF = keepMask.to(x.dtype);
  const safe = keepMask.to(t.dtype).mul(t); // ignored rows read class 0, then are masked out
  // The gather names nllLoss in its errors (a target out of range shows when it runs).
  const picked = gatherRows(x, safe);
  const wy = w ? w.indexSelect(0, safe).mul(keepF) : keepF;
  const rows = picked.neg().mul(wy);
  if (o.reduction === 'none') return rows.reshape([x0.shape[0], ...x0.shape.slice(2)]);
  if (o.reduction === 'sum') return rows.sum();
  return rows.sum().div(wy.sum());
}

/** x[r, t[r]] for every row of x [rows, C], differentiable in x; a target out of range fails naming nllLoss. */
function gatherRows(x: Tensor, t: Tensor): Tensor {
  const idx = wrap(native.reshape(t.handle, [t.shape[0], 1]));
  const picked = record(
    wrap(native.gather(x.handle, 1, idx.handle, 'nllLoss')),
    'nllLoss',
    [x],
    (g) => {
      const zeros = wrap(native.full([...x.shape], g.dtype, g.device, 0));
      return [wrap(native.scatterAdd(zeros.handle, 1, idx.handle, g.handle))];
    },
    { savesOutput: false },
  );
  return picked.reshape([t.shape[0]]);
}

export function mseLoss(input: Tensor, target: Tensor, options: ReductionOptions = {}): Tensor {
  const { reduction } = reductionOptions('mseLoss', options);
  const [a, b] = pairOf('mseLoss', input, target);
  return reduce(a.sub(b).square(), reduction);
}

export function l1Loss(input: Tensor, target: Tensor, options: ReductionOptions = {}): Tensor {
  const { reduction } = reductionOptions('l1Loss', options);
  const [a, b] = pairOf('l1Loss', input, target);
  return reduce(a.sub(b).abs(), reduction);
}

/** Huber-style loss: quadratic below `beta`, linear above. */
export function smoothL1Loss(input: Tensor, target: Tensor, options: SmoothL1LossOptions = {}): Tensor {
  const { reduction, beta } = smoothL1Options('smoothL1Loss', options);
  const [a, b] = pairOf('smoothL1Loss', input, target);
  const d = a.sub(b).abs();
  if (beta === 0) return reduce(d, reduction);
  const quad = d.square().mul(0.5 / beta);
  const lin = d.sub(0.5 * beta);
  return reduce(where(d.lt(beta), quad, lin), reduction);
}

/**
 * Huber loss, as torch.nn.functional.huber_loss: ½d² where |d| < delta, delta·(|d| − ½delta)
 * beyond (smoothL1Loss scaled by delta).
 */
export function huberLoss(input: Tensor, target: Tensor, options: HuberLossOptions = {}): Tensor {
  const { reduction, delta } = huberOptions('huberLoss', options);
  const [a, b] = pairOf('huberLoss', input, target);
  const d = a.sub(b);
  const abs = d.abs();
  return reduce(where(abs.lt(delta), d.square().mul(0.5), abs.sub(0.5 * delta).mul(delta)), reduction);
}

/** Binary cross-entropy on logits in the stable form max(x,0) − x·y + log(1 + e^−|x|). */
export function binaryCrossEntropyWithLogits(input: Tensor, target: Tensor, options: BCEWithLogitsOptions = {}): Tensor {
  const op = 'binaryCrossEntropyWithLogits';
  const o = bceOptions(op, options);
  const [x, y] = pairOf(op, input, target);
  for (const [name, t] of [
    ['weight', o.weight],
    ['posWeight', o.posWeight],
  ] as const) {
    if (!t) continue;
    if (!isFloating(t.dtype)) throw dtypeError(op, `${name} must be a floating tensor, got ${t.dtype}`);
    const n = t.ndim,
      m = x.ndim;
    if (n > m || t.shape.some((s, i) => s !== 1 && s !== x.shape[m - n + i]))
      throw shapeError(op, `${name} ${shapeStr(t.shape)} does not broadcast against input ${shapeStr(x.shape)}`);
  }
  const softplusNeg = log1p(x.abs().neg().exp()).add(x.neg().relu()); // log(1 + e^−x)
  let loss: Tensor;
  if (o.posWeight) {
    // (1 − y)·x + (1 + (pw − 1)·y)·log(1 + e^−x)
    const w = o.posWeight.sub(1).mul(y).add(1);
    loss = y.neg().add(1).mul(x).add(w.mul(softplusNeg));
  } else {
    loss = y.neg().add(1).mul(x).add(softplusNeg);
  }
  if (o.weight) loss = loss.mul(o.weight);
  return reduce(loss, o.reduction);
}
