/** scatter and scatterReduce (sum, prod, mean, amax, amin), and their gradients, as torch's. */
import { native } from '../native';
import { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { checkValueFits } from '../dtype';
import { checkOptions, describe } from '../errors';
import type { ScatterReduceName } from '../../types/native';
import { castTo, checkTensor, normDim, typeError, held, wrap } from './util';
import { div, eq, logicalAnd, mul, where } from './elementwise';

function checkIndex(op: string, index: Tensor): void {
  checkTensor(op, 'index', index);
  if (index.dtype !== 'i64' && index.dtype !== 'i32')
    throw typeError(op, `index must be an i64 or i32 tensor, got ${index.dtype}`, 'ERR_DTYPE');
}

function zerosOf(shape: readonly number[], like: Tensor): Tensor {
  return wrap(native.full([...shape], like.dtype, like.device, 0));
}

/** `g` gathered at index (index's shape), zero-padded to src's shape where src is larger. */
function srcGrad(g: Tensor, d: number, index: Tensor, src: Tensor): Tensor {
  return padTo(wrap(native.gather(g.handle, d, index.handle)), src.shape);
}

/** g with the positions that index writes set to 0 (they no longer depend on the input). */
function maskWritten(g: Tensor, d: number, index: Tensor): Tensor {
  const zero = zerosOf(index.shape, g);
  return wrap(native.scatter(g.handle, d, index.handle, zero.handle));
}

/**
 * A copy of `x` with `src` (a tensor, or one number) written along `dim` at `index`, as
 * torch.scatter: out[i][index[i][j]] = src[i][j] for dim 1. Where an index repeats, one of the
 * writes wins.
 */
export function scatter(x: Tensor, dim: number, index: Tensor, src: Tensor | number): Tensor {
  checkTensor('scatter', 'input', x);
  checkIndex('scatter', index);
  const d = normDim('scatter', dim, x.ndim);
  if (typeof src === 'number') {
    checkValueFits('scatter', src, x.dtype);
    const value = wrap(native.full([...index.shape], x.dtype, x.device, src));
    const out = wrap(native.scatter(x.handle, d, index.handle, value.handle));
    return record(out, 'scatter', [x], (g) => [maskWritten(g, d, index)], { savesOutput: false, saves: [index] });
  }
  if (!(src instanceof Tensor)) throw typeError('scatter', `src must be a Tensor or a number, got ${describe(src)}`);
  const out = wrap(native.scatter(x.handle, d, index.handle, src.handle));
  return record(out, 'scatter', [x, src], (g) => [maskWritten(g, d, index), srcGrad(g, d, index, src)], {
    savesOutput: false,
    saves: [index],
  });
}

export type ScatterReduce = ScatterReduceName;
const REDUCES: readonly ScatterReduce[] = ['sum', 'prod', 'mean', 'amax', 'amin'];

export interface ScatterReduceOptions {
  /** Whether x's own values take part in the reduction (default true), as torch's include_self. */
  includeSelf?: boolean;
}

/**
 * `x` with `src` reduced into it along `dim` at `index`, as torch.scatter_reduce: 'sum', 'prod',
 * 'mean' (integers round down), 'amax' or 'amin'. With `includeSelf: false` the positions written
 * start from the reduction's identity instead of x's value.
 */
export function scatterReduce(
  x: Tensor,
  dim: number,
  index: Tensor,
  src: Tensor,
  reduce: ScatterReduce,
  options?: ScatterReduceOptions,
): Tensor {
  checkTensor('scatterReduce', 'input', x);
  checkIndex('scatterReduce', index);
  checkTensor('scatterReduce', 'src', src);
  checkOptions('scatterReduce', options, ['includeSelf']);
  if (!REDUCES.includes(reduce)) throw typeError('scatterReduce', `reduce must be one of ${REDUCES.join(', ')}, got ${describe(reduce)}`);
  const includeSelf = options?.includeSelf ?? true;
  if (typeof includeSelf !== 'boolean') throw typeError('scatterReduce', `includeSelf must be a boolean, got ${describe(includeSelf)}`);
  const d = normDim('scatterReduce', dim, x.ndim);
  const run = (a: Tensor, s: Tensor) => wrap(native.scatterReduce(a.handle, d, index.handle, s.handle, reduce, includeSelf));
  const out = run(x, src);
  // Of the gradients, only amax's, amin's and prod's read the output.
  return record(
    out,
    'scatterReduce',
    [x, src],
    (g) => {
      const ix = index;
      const selfGrad = (t: Tensor) => (includeSelf ? t : maskWritten(t, d, ix));
      switch (reduce) {
        case 'sum':
          return [selfGrad(g), srcGrad(g, d, ix, src)];
        case 'mean': {
          // Each target's count: itself (when included) plus the writes it received.
          const ones = wrap(native.full([...ix.shape], g.dtype, g.device, 1));
          const start = wrap(native.full([...x.shape], g.dtype, g.device, includeSelf ? 1 : 0));
          const n = wrap(native.scatterAdd(start.handle, d, ix.handle, ones.handle));
          const per = div(g, where(eq(n, 0), 1, n));
          return [selfGrad(per), srcGrad(per, d, ix, src)];
        }
        case 'amax':
        case 'amin': {
          // The gradient is shared evenly among the values equal to the result (as torch).
          const srcCut = cutTo(src, ix.shape);
          const selfHit = castTo(eq(x, out), g.dtype);
          const srcHit = castTo(eq(srcCut, wrap(native.gather(out.handle, d, ix.handle))), g.dtype);
          const n = wrap(native.scatterAdd((includeSelf ? selfHit : zerosOf(x.shape, g)).handle, d, ix.handle, srcHit.handle));
          const per = div(g, where(eq(n, 0), 1, n));
          return [selfGrad(mul(selfHit, per)), padTo(mul(srcHit, wrap(native.gather(per.handle, d, ix.handle))), src.shape)];
        }
        default: {
          // prod: divide by nothing that is zero. Self: the product with self's zeros made 1, over
          // self. Src: where it is the only zero of its target, the product without it.
          const selfMasked = where(eq(x, 0), 1, x);
          const gSelf = div(mul(g, run(selfMasked, src)), selfMasked);
          const srcCut = cutTo(src, ix.shape);
          const srcZero = eq(srcCut, 0);
          const zerosAt = wrap(
            native.gather(held(native.scatterAdd(zerosOf(x.shape, g).handle, d, ix.handle, castTo(srcZero, g.dtype).handle)), d, ix.handle),
          );
          const single = logicalAnd(srcZero, eq(zerosAt, 1));
          const withoutIt = run(x, padTo(where(single, 1, srcCut), src.shape));
          const gSrc = where(
            single,
            wrap(native.gather(mul(g, withoutIt).handle, d, ix.handle)),
            div(wrap(native.gather(mul(g, out).handle, d, ix.handle)), where(srcZero, 1, srcCut)),
          );
          return [selfGrad(gSelf), padTo(gSrc, src.shape)];
        }
      }
    },
    { savesOutput: reduce !== 'sum' && reduce !== 'mean', saves: [index] },
  );
}

/** `t`'s leading block of `shape` (shapes as scatter allows: no larger in any dim). */
function cutTo(t: Tensor, shape: readonly number[]): Tensor {
  let r = t;
  for (let k = 0; k < shape.length; k++) if (r.shape[k] > shape[k]) r = wrap(native.narrow(r.handle, k, 0, shape[k]));
  return r;
}

function padTo(t: Tensor, shape: readonly number[]): Tensor {
  let r = t;
  for (let k = 0; k < shape.length; k++) {
    const short = shape[k] - r.shape[k];
    if (short > 0)
      r = wrap(
        native.cat(
          [
            r.handle,
            zerosOf(
              r.shape.map((s, i) => (i === k ? short : s)),
              r,
            ).handle,
          ],
          k,
        ),
      );
  }
  return r;
}
