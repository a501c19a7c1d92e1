/**
 * Losses on probabilities: binary cross-entropy (PyTorch's clamped logs and its gradient formula)
 * and the Kullback-Leibler divergence (with 'batchmean' and log-space targets).
 */
import type { Tensor } from '../../tensor';
import { noGrad } from '../../dispatch/grad_mode';
import { record } from '../../dispatch/record';
import { clamp, log1p, where } from '../../ops/elementwise';
import { shapeStr } from '../../ops/util';
import { isFloating } from '../../dtype';
import { checkOptions, dtypeError, flockError, shapeError } from '../../errors';
import { checkBool, checkChoice, checkOptionalTensor } from '../../validate';
import { pairOf, reduce, type Reduction } from './loss';
import { autocastArgs } from '../../dispatch/autocast';

export interface BCELossOptions {
  reduction?: Reduction;
  /** Per-element rescaling of each term, broadcast against the input (no gradient, as PyTorch). */
  weight?: Tensor | null;
}

export type KLDivReduction = Reduction | 'batchmean';
const KL_REDUCTIONS: readonly KLDivReduction[] = ['mean', 'batchmean', 'sum', 'none'];
const REDUCTIONS: readonly Reduction[] = ['mean', 'sum', 'none'];
/** PyTorch's floor of x·(1 − x) in the BCE gradient: 1e-12 as an f32 constant (`static const float EPSILON`). */
const BCE_EPSILON = Math.fround(1e-12);

export interface KLDivLossOptions {
  /** Default 'mean' (over every element, as PyTorch); 'batchmean' divides the sum by the batch size. */
  reduction?: KLDivReduction;
  /** The target holds log-probabilities (default false: probabilities). */
  logTarget?: boolean;
}

/** @internal */
export function bceLossOptions(op: string, options: unknown) {
  const o = checkOptions(op, options as BCELossOptions | undefined, ['reduction', 'weight']);
  return {
    reduction: checkChoice(op, 'reduction', o.reduction ?? 'mean', REDUCTIONS),
    weight: checkOptionalTensor(op, 'weight', o.weight),
  };
}

/** @internal */
export function klDivOptions(op: string, options: unknown) {
  const o = checkOptions(op, options as KLDivLossOptions | undefined, ['reduction', 'logTarget']);
  return {
    reduction: checkChoice(op, 'reduction', o.reduction ?? 'mean', KL_REDUCTIONS),
    logTarget: checkBool(op, 'logTarget', o.logTarget ?? false),
  };
}

/**
 * Binary cross-entropy between probabilities `input` (in [0, 1]) and `target` of the same shape,
 * as torch.nn.functional.binary_cross_entropy: −w·(y·log x + (1 − y)·log(1 − x)) with each log
 * clamped to ≥ −100, so x = 0 or 1 gives a finite loss. The input gradient is PyTorch's
 * w·(x − y) / max(x·(1 − x), 1e-12), the target's −w·logit(x). Inputs outside [0, 1] give NaN
 * (PyTorch's CPU kernel throws; checking would read the values back).
 */
export function binaryCrossEntropy(input: Tensor, target: Tensor, options: BCELossOptions = {}): Tensor {
  return binaryCrossEntropyWith('binaryCrossEntropy', input, target, bceLossOptions('binaryCrossEntropy', options));
}

/** @internal binaryCrossEntropy with checked options, errors named `op`. */
export function binaryCrossEntropyWith(op: string, input: Tensor, target: Tensor, o: ReturnType<typeof bceLossOptions>): Tensor {
  const [x, y] = pairOf(op, ...autocastArgs('nn.functional.binaryCrossEntropy', input, target));
  let w: Tensor | null = null;
  if (o.weight) {
    const t = o.weight;
    if (!isFloating(t.dtype)) throw dtypeError(op, `weight must be a floating tensor, got ${t.dtype}`);
    if (t.ndim > x.ndim || t.shape.some((s, i) => s !== 1 && s !== x.shape[x.ndim - t.ndim + i]))
      throw shapeError(op, `weight ${shapeStr(t.shape)} does not broadcast against input ${shapeStr(x.shape)}`);
    if (t.device !== x.device) throw flockError('ERR_DEVICE', op, `weight is on ${t.device}, input on ${x.device}`);
    w = (t.dtype === x.dtype ? t : t.to(x.dtype)).detach();
  }
  const loss = noGrad(() => {
    const l = y
      .sub(1)
      .mul(clamp(log1p(x.neg()), -100))
      .sub(y.mul(clamp(x.log(), -100)));
    return w ? l.mul(w) : l;
  });
  const weighted = (g: Tensor) => (w ? g.mul(w) : g);
  const out = record(
    loss,
    op,
    [x, y],
    (g) => [
      x.requiresGrad
        ? weighted(g)
            .mul(x.sub(y))
            .div(clamp(x.neg().add(1).mul(x), BCE_EPSILON))
        : null,
      y.requiresGrad ? weighted(g).mul(log1p(x.neg()).sub(x.log())) : null,
    ],
    { savesOutput: false },
  );
  return reduce(out, o.reduction);
}

/**
 * The Kullback-Leibler divergence of `target` from the log-probabilities `input`, as
 * torch.nn.functional.kl_div: target·(log target − input) where target > 0 (0 elsewhere), or
 * exp(target)·(target − input) with logTarget. 'mean' averages over every element; 'batchmean'
 * (the KL divergence proper) divides the sum by the batch size. A target of 0 gets gradient 0
 * (PyTorch 1.13's is NaN there).
 */
export function klDiv(input: Tensor, target: Tensor, options: KLDivLossOptions = {}): Tensor {
  return klDivWith('klDiv', input, target, klDivOptions('klDiv', options));
}

/** @internal klDiv with checked options, errors named `op`. */
export function klDivWith(op: string, input: Tensor, target: Tensor, o: ReturnType<typeof klDivOptions>): Tensor {
  const [x, t] = pairOf(op, ...autocastArgs('nn.functional.klDiv', input, target));
  let loss: Tensor;
  if (o.logTarget) loss = t.exp().mul(t.sub(x));
  else {
    const pos = t.gt(0);
    // log of 1 where the target is not positive, so neither branch makes a NaN gradient.
    const safe = where(pos, t, 1);
    loss = where(pos, t.mul(safe.log().sub(x)), 0);
  }
  if (o.reduction !== 'batchmean') return reduce(loss, o.reduction);
  return x.ndim === 0 ? loss.sum() : loss.sum().div(x.shape[0]);
}
