/** normalize, cosineSimilarity and pairwiseDistance as PyTorch 1.13's, built from norm and element-wise ops. */
import type { Tensor } from '../../tensor';
import { noGrad } from '../../dispatch/grad_mode';
import { record } from '../../dispatch/record';
import { norm } from '../../ops/norms';
import { clamp } from '../../ops/elementwise';
import { normDim, shapeStr } from '../../ops/util';
import { isFloating, promoteTypes } from '../../dtype';
import { checkOptions, flockError } from '../../errors';
import { checkBool, checkNumber } from '../../validate';
import { tensorArg } from './args';
import { autocastArgs } from '../../dispatch/autocast';

export interface NormalizeOptions {
  /** The norm's order (default 2; Infinity for the max norm). */
  p?: number;
  /** Default 1. */
  dim?: number;
  /** The smallest denominator (default 1e-12). */
  eps?: number;
}

export interface CosineSimilarityOptions {
  /** Default 1. */
  dim?: number;
  /** The smallest norm each input is divided by (default 1e-8). */
  eps?: number;
}

export interface PairwiseDistanceOptions {
  /** The norm's order (default 2). */
  p?: number;
  /** Added to the difference before the norm (default 1e-6). */
  eps?: number;
  keepdim?: boolean;
}

/** A floating tensor argument (integers become f32, as PyTorch's result type of a division). */
function floating(op: string, name: string, v: unknown): Tensor {
  const t = tensorArg(op, name, v);
  return isFloating(t.dtype) ? t : t.to('f32');
}

/** Both inputs expanded to their broadcast shape in their common floating dtype. */
function broadcastPair(op: string, a: unknown, b: unknown): [Tensor, Tensor] {
  let x = floating(op, 'x1', a),
    y = floating(op, 'x2', b);
  if (x.device !== y.device) throw flockError('ERR_DEVICE', op, `x1 is on ${x.device}, x2 on ${y.device}`);
  const n = Math.max(x.ndim, y.ndim);
  const shape: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = x.shape[x.ndim - n + i] ?? 1,
      t = y.shape[y.ndim - n + i] ?? 1;
    if (s !== t && s !== 1 && t !== 1)
      throw flockError('ERR_SHAPE', op, `x1 ${shapeStr(x.shape)} and x2 ${shapeStr(y.shape)} do not broadcast (dim ${i}: ${s} vs ${t})`);
    shape.push(s === 1 ? t : s);
  }
  const dtype = promoteTypes(x.dtype, y.dtype);
  if (x.dtype !== dtype) x = x.to(dtype);
  if (y.dtype !== dtype) y = y.to(dtype);
  return [x.expand(shape), y.expand(shape)];
}

/**
 * `x / max(‖x‖_p, eps)` along `dim`, as torch.nn.functional.normalize: unit vectors (p = 2 by
 * default, along dim 1), a zero vector staying zero. Differentiable.
 */
export function normalize(x: Tensor, options: NormalizeOptions = {}): Tensor {
  const op = 'normalize';
  const t = floating(op, 'input', x);
  const o = checkOptions(op, options, ['p', 'dim', 'eps']);
  const p = checkNumber(op, 'p', o.p ?? 2, { infinite: true });
  const eps = checkNumber(op, 'eps', o.eps ?? 1e-12, { min: 0 });
  const dim = normDim(op, checkNumber(op, 'dim', o.dim ?? 1, { integer: true }), t.ndim);
  return t.div(clamp(norm(t, p, dim, true), eps));
}

/**
 * The cosine of the angle between x1 and x2 along `dim` (inputs broadcast), as PyTorch 1.13's
 * cosine_similarity: Σ x1·x2 / √(max(Σx1², eps²) · max(Σx2², eps²)). As there, the clamps are
 * in place under no_grad: a squared norm below eps² is replaced by eps² in value, while its gradient
 * stays the squared norm's.
 */
export function cosineSimilarity(x1: Tensor, x2: Tensor, options: CosineSimilarityOptions = {}): Tensor {
  const op = 'cosineSimilarity';
  const [a, b] = broadcastPair(op, ...autocastArgs('nn.functional.cosineSimilarity', x1, x2));
  const o = checkOptions(op, options, ['dim', 'eps']);
  const eps = checkNumber(op, 'eps', o.eps ?? 1e-8, { min: 0 });
  const dim = normDim(op, checkNumber(op, 'dim', o.dim ?? 1, { integer: true }), a.ndim);
  const denom = squaredNorm(a, dim, eps)
    .mul(squaredNorm(b, dim, eps))
    .rsqrt();
  return a.mul(b).sum(dim).mul(denom.squeeze(dim));
}

/** Σ t² along `dim` (kept), at least eps² in value, with the unclamped sum's gradient. */
function squaredNorm(t: Tensor, dim: number, eps: number): Tensor {
  const s = t.square().sum(dim, true);
  const value = noGrad(() => s.clamp(eps * eps));
  return record(value, 'cosineSimilarity', [s], (g) => [g], { savesOutput: false });
}

/**
 * ‖x1 − x2 + eps‖_p over the last dim (inputs broadcast), as torch.nn.functional.pairwise_distance.
 */
export function pairwiseDistance(x1: Tensor, x2: Tensor, options: PairwiseDistanceOptions = {}): Tensor {
  const op = 'pairwiseDistance';
  const [a, b] = broadcastPair(op, x1, x2);
  const o = checkOptions(op, options, ['p', 'eps', 'keepdim']);
  const p = checkNumber(op, 'p', o.p ?? 2, { infinite: true });
  const eps = checkNumber(op, 'eps', o.eps ?? 1e-6, { infinite: false });
  const keepdim = checkBool(op, 'keepdim', o.keepdim ?? false);
  if (a.ndim === 0) throw flockError('ERR_SHAPE', op, 'inputs must have at least one dim, got two scalars');
  return norm(a.sub(b).add(eps), p, a.ndim - 1, keepdim);
}
