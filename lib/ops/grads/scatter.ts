/** The gradients of scatter and scatterReduce (sum, prod, mean, amax, amin), as torch's. */
import type { Tensor } from '../../tensor';
import type { ScatterReduce } from '../scatter';
import { native } from '../../native';
import { castTo, held, wrap } from '../util';
import { div, eq, logicalAnd, mul, where } from '../elementwise';
import { defineGrads } from './table';

declare module './table' {
  interface GradContexts {
    scatter: { dim: number; index: Tensor; src: Tensor | number };
    scatterReduce: { input: Tensor; out: Tensor; dim: number; index: Tensor; src: Tensor; reduce: ScatterReduce; includeSelf: boolean };
  }
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

defineGrads({
  scatter: {
    grad: (g, { dim, index, src }) =>
      typeof src === 'number' ? [maskWritten(g, dim, index)] : [maskWritten(g, dim, index), srcGrad(g, dim, index, src)],
  },
  // Only amax's, amin's and prod's read the output: the op saves it for those alone.
  scatterReduce: {
    savesOutput: true,
    grad: (g, { input: x, out, dim: d, index: ix, src, reduce, includeSelf }) => {
      const run = (a: Tensor, s: Tensor) => wrap(native.scatterReduce(a.handle, d, ix.handle, s.handle, reduce, includeSelf));
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
  },
});
