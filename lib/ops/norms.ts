/** Vector norms (torch.norm / torch.linalg.vector_norm) over any dims; PyTorch's gradient, in lib/ops/grads/norms.ts. */
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { noGrad } from '../dispatch/grad_mode';
import { describe } from '../errors';
import { isFloating } from '../dtype';
import { castTo, checkTensor, dimList, rangeError, shapeStr, typeError } from './util';
import { autocastArgs } from '../dispatch/autocast';
import { abs, ne, pow, sqrt, square } from './elementwise';
import { max, min, sum } from './reduce';
import { gradOf } from './grads/table';

/** The order of a norm: a number (inf and -inf included) or 'fro' (the 2-norm over at most 2 dims). */
export type NormOrd = number | 'fro';

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
  return record(out, 'norm', [x], (g) => gradOf('norm').grad(g, { input: x, out, ord, dims: reduceDims, keepdim }));
}
