/** Matrix products: matmul with NumPy semantics (1-D, 2-D, batched with broadcasting). */
import { native } from '../native';
import type { Tensor } from '../tensor';
import type { CanonicalDType } from '../dtype';
import { record, recording } from '../dispatch/record';
import { checkTensor, rangeError, shapeStr, sumTo, wrap } from './util';
import { flockError } from '../errors';
import { type AutocastDType, autocastLowering } from '../dispatch/autocast';

/**
 * op(a) · op(b) on ≥2-D operands, where op transposes the last two dims when asked. The kernels
 * read transposed operands in place, so no copy is made. With `lower` (autocast's low dtype, see
 * autocastLowering), operands may also be f32: the product has the values of casting them to
 * `lower` first, and is in `lower`; each gradient comes back in its operand's dtype, as the casts'
 * backward would give it.
 */
export function matmulT(a: Tensor, b: Tensor, transA: boolean, transB: boolean, lower?: AutocastDType): Tensor {
  return product(a, b, transA, transB, lower, lower);
}

function product(
  a: Tensor,
  b: Tensor,
  transA: boolean,
  transB: boolean,
  lower: AutocastDType | undefined,
  to: CanonicalDType | undefined,
): Tensor {
  const out = productUntracked(a, b, transA, transB, lower, to);
  if (!recording(a, b)) return out;
  return record(
    out,
    'matmul',
    [a, b],
    (g, into) => {
      const [ga, gb] = productGrads(a, b, transA, transB, lower, g, into);
      return [ga && sumTo(ga, a.shape), gb && sumTo(gb, b.shape)];
    },
    { savesOutput: false },
  );
}

/** op(a) · op(b) as {@link matmulT} computes it, recording nothing (for ops that record one node of their own). */
export function productUntracked(
  a: Tensor,
  b: Tensor,
  transA: boolean,
  transB: boolean,
  lower: AutocastDType | undefined,
  to?: CanonicalDType,
): Tensor {
  // `to`, the product's dtype, defaults to `lower`.
  const out = to ?? lower;
  const compute = lowering(a, b, lower, out);
  if (compute === null) return wrap(native.matmul(a.handle, b.handle, transA, transB));
  return wrap(native.matmulLowered(a.handle, b.handle, transA, transB, compute, out ?? compute));
}

/** The dtype a product of `a` and `b` into `out` computes in: null for a plain product (no autocast, or all in the low dtype already). */
function lowering(a: Tensor, b: Tensor, lower: AutocastDType | undefined, out: CanonicalDType | undefined): AutocastDType | null {
  return lower === undefined || (a.dtype === lower && b.dtype === lower && out === lower) ? null : lower;
}

/**
 * The gradients of op(a) · op(b) (as {@link productUntracked} computed it) for the operands that
 * require grad, given the product's gradient `g`, each in its operand's dtype and not yet reduced
 * over broadcast batch dims. With `into` (the engine's accumulation targets, see BackwardFn), an
 * operand's gradient of 2-D factors is added by the GEMM straight into `into[0]` (a) or `into[1]`
 * (b), which then stands for it.
 */
export function productGrads(
  a: Tensor,
  b: Tensor,
  transA: boolean,
  transB: boolean,
  lower: AutocastDType | undefined,
  g: Tensor,
  into?: readonly (Tensor | null)[],
): [Tensor | null, Tensor | null] {
  // C = A'B' with A' = op(A), B' = op(B): dA' = g·B'ᵀ, dB' = A'ᵀ·g, transposed back when needed.
  const ga = a.requiresGrad
    ? transA
      ? factorGrad(b, g, transB, true, lower, a, into?.[0])
      : factorGrad(g, b, false, !transB, lower, a, into?.[0])
    : null;
  const gb = b.requiresGrad
    ? transB
      ? factorGrad(g, a, true, transA, lower, b, into?.[1])
      : factorGrad(a, g, !transA, false, lower, b, into?.[1])
    : null;
  return [ga, gb];
}

/** op(x) · op(y) in `operand`'s dtype: added into `target` in one pass where the GEMM can, else a new tensor. */
function factorGrad(
  x: Tensor,
  y: Tensor,
  tx: boolean,
  ty: boolean,
  lower: AutocastDType | undefined,
  operand: Tensor,
  target: Tensor | null | undefined,
): Tensor {
  if (
    target &&
    x.ndim === 2 &&
    y.ndim === 2 &&
    native.matmulInto(x.handle, y.handle, tx, ty, target.handle, lowering(x, y, lower, target.dtype))
  )
    return target;
  return product(x, y, tx, ty, lower, operand.dtype);
}

export function matmul(x: Tensor, y: Tensor): Tensor {
  checkTensor('matmul', 'a', x);
  checkTensor('matmul', 'b', y);
  if (x.ndim === 0 || y.ndim === 0)
    throw rangeError('matmul', `both operands need at least 1 dim, got ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`);
  const lowering = autocastLowering('matmul', x, y);
  if (lowering) {
    x = lowering.operand(x);
    y = lowering.operand(y);
  }
  // As torch.matmul: operands of different dtypes are refused, not promoted (autocast casts them).
  if (x.dtype !== y.dtype && !lowering)
    throw flockError('ERR_DTYPE', 'matmul', `expected both operands to have the same dtype, got ${x.dtype} and ${y.dtype}`);
  let a = x,
    b = y;
  const vecA = a.ndim === 1,
    vecB = b.ndim === 1;
  if (vecA) a = a.reshape([1, a.shape[0]]);
  if (vecB) b = b.reshape([b.shape[0], 1]);
  let out = matmulT(a, b, false, false, lowering?.dtype);
  if (vecA && vecB) out = out.reshape([]);
  else if (vecA) out = out.squeeze(-2);
  else if (vecB) out = out.squeeze(-1);
  return out;
}

/** Matrix product of 2-D tensors, like torch.mm. */
export function mm(a: Tensor, b: Tensor): Tensor {
  checkTensor('mm', 'a', a);
  checkTensor('mm', 'b', b);
  if (a.ndim !== 2 || b.ndim !== 2) throw rangeError('mm', `expected 2-D operands, got ${shapeStr(a.shape)} and ${shapeStr(b.shape)}`);
  return matmul(a, b);
}

/** Batched matrix product of 3-D tensors, like torch.bmm. */
export function bmm(a: Tensor, b: Tensor): Tensor {
  checkTensor('bmm', 'a', a);
  checkTensor('bmm', 'b', b);
  if (a.ndim !== 3 || b.ndim !== 3) throw rangeError('bmm', `expected 3-D operands, got ${shapeStr(a.shape)} and ${shapeStr(b.shape)}`);
  return matmul(a, b);
}
