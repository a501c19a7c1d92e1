/** scatter and scatterReduce (sum, prod, mean, amax, amin), as torch's; the gradients are in lib/ops/grads/scatter.ts. */
import { native } from '../native';
import { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { checkValueFits } from '../dtype';
import { checkOptions, describe } from '../errors';
import type { ScatterReduceName } from '../../types/native';
import { checkTensor, normDim, typeError, wrap } from './util';
import { gradOf } from './grads/table';

function checkIndex(op: string, index: Tensor): void {
  checkTensor(op, 'index', index);
  if (index.dtype !== 'i64' && index.dtype !== 'i32')
    throw typeError(op, `index must be an i64 or i32 tensor, got ${index.dtype}`, 'ERR_DTYPE');
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
    return record(out, 'scatter', [x], (g) => gradOf('scatter').grad(g, { dim: d, index, src }), { savesOutput: false, saves: [index] });
  }
  if (!(src instanceof Tensor)) throw typeError('scatter', `src must be a Tensor or a number, got ${describe(src)}`);
  const out = wrap(native.scatter(x.handle, d, index.handle, src.handle));
  return record(out, 'scatter', [x, src], (g) => gradOf('scatter').grad(g, { dim: d, index, src }), {
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
  const out = wrap(native.scatterReduce(x.handle, d, index.handle, src.handle, reduce, includeSelf));
  // Of the gradients, only amax's, amin's and prod's read the output.
  return record(
    out,
    'scatterReduce',
    [x, src],
    (g) => gradOf('scatterReduce').grad(g, { input: x, out, dim: d, index, src, reduce, includeSelf }),
    { savesOutput: reduce !== 'sum' && reduce !== 'mean', saves: [index] },
  );
}
