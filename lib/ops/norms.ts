/** Vector norms (torch.norm / torch.linalg.vector_norm) over any dims, with PyTorch's gradient. */
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { noGrad } from '../dispatch/grad_mode';
import { describe } from '../errors';
import { isFloating } from '../dtype';
import { castTo, checkTensor, dimList, rangeError, shapeStr, typeError, wrap } from './util';
import { native } from '../native';
import { autocastArgs } from '../dispatch/autocast';
import { abs, div, eq, logicalOr, mul, ne, pow, sign, sqrt, square, where } from './elementwise';
import { isnan } from './predicates';
import { max, min, sum } from './reduce';

/** The order of a norm: a number (inf and -inf included) or 'fro' (the 2-norm over at most 2 dims). */
export type NormOrd = number | 'fro';

function kept(t: Tensor, shape: readonly number[], dims: number[], keepdim: boolean): Tensor {
  return keepdim
    ? t
    : wrap(
        native.reshape(
          t.handle,
          shape.map((s, i) => (dims.includes(i) ? 1 : s)),
        ),
      );
}

/**
 * The p-norm of `x` over `dim` (all dims by default): `(Σ |x|^p)^(1/p)`; p = inf/-inf the largest /
 * smallest |x|, p = 0 the count of non-zeros, 'fro' (the default) the 2-norm over one or two dims.
 * Floating inputs only. The gradient is PyTorch's subgradient: 0 where the norm is 0 (p >= 1), and
 * shared evenly between ties for p = ±inf.
 */
export function norm(x: Tensor, p: NormOrd = 'fro', dim?: number | number[], keepdim = false): Tensor {
  checkTensor('norm', 'input', x);
  if (!isFloating(x.dtype))
    throw typeError('norm', `expected a floating input (f32, f64, bf16, f16), got ${x.dtype} of shape ${shapeStr(x.shape)}`, 'ERR_DTYPE');
  if (typeof keepdim !== 'boolean') throw typeError('norm', `keepdim must be a boolean, got ${describe(keepdim)}`);
  const dims = dimList('norm', dim, x.ndim);
  [x] = autocastArgs('norm', x);
  if (new Set(dims).size !== dims.length) throw typeError('norm', `dim ${JSON.stringify(dim)} names a dim more than once`);
  let ord: number;
  if (p === 'fro') {
    if (dims.length > 2) throw rangeError('norm', `'fro' takes at most 2 dims, got ${JSON.stringify(dim)} for shape ${shapeStr(x.shape)}`);
    ord = 2;
  } else if (typeof p === 'number' && !Number.isNaN(p)) {
    ord = p;
  } else {
    throw typeError(
      'norm',
      `p must be a number (inf and -inf included) or 'fro', got ${describe(p)}${(p as unknown) === 'nuc' ? ' (the nuclear norm is not supported)' : ''}`,
    );
  }
  const reduceDims = dims.length === 0 ? x.shape.map((_, i) => i) : dims;
  if (Math.abs(ord) === Infinity && reduceDims.some((d) => x.shape[d] === 0))
    throw rangeError(
      'norm',
      `p = ${ord} of an empty reduction is undefined (shape ${shapeStr(x.shape)}, dims ${JSON.stringify(reduceDims)})`,
    );
  const out = noGrad(() => {
    const a = abs(x);
    if (ord === Infinity) return max(a, reduceDims, keepdim);
    if (ord === -Infinity) return min(a, reduceDims, keepdim);
    if (ord === 0) return castTo(sum(ne(x, 0), reduceDims, keepdim), x.dtype);
    if (ord === 1) return sum(a, reduceDims, keepdim);
    if (ord === 2) return sqrt(sum(square(x), reduceDims, keepdim));
    return pow(sum(pow(a, ord), reduceDims, keepdim), 1 / ord);
  });
  return record(out, 'norm', [x], (g) => [normBackward(x, out, g, ord, reduceDims, keepdim)]);
}

function normBackward(x: Tensor, out: Tensor, g: Tensor, p: number, dims: number[], keepdim: boolean): Tensor {
  const gk = kept(g, x.shape, dims, keepdim);
  const nk = kept(out, x.shape, dims, keepdim);
  const zeroNorm = eq(nk, 0);
  if (p === 0) return mul(x, 0);
  if (p === 1) return mul(sign(x), gk);
  if (p === 2) return mul(x, where(zeroNorm, 0, div(gk, nk)));
  if (Math.abs(p) === Infinity) {
    const a = abs(x);
    const hit = castTo(logicalOr(eq(a, nk), isnan(a)), x.dtype);
    const count = sum(hit, dims, true);
    return mul(sign(x), mul(div(gk, count), hit));
  }
  const a = abs(x);
  if (p < 1) return mul(mul(sign(x), where(eq(x, 0), 0, pow(a, p - 1))), mul(gk, pow(nk, 1 - p)));
  const scale = where(zeroNorm, 0, div(gk, pow(nk, p - 1)));
  if (p < 2) return mul(mul(sign(x), pow(a, p - 1)), scale);
  return mul(mul(x, pow(a, p - 2)), scale);
}
