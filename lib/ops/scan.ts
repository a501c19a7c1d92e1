/** Cumulative sums and products along a dim (cumsum, cumprod); their gradients are in lib/ops/grads/scan.ts. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { type DType, isFloating, toDType } from '../dtype';
import { checkOptions } from '../errors';
import { castTo, checkTensor, normDim, wrap } from './util';
import { autocastArgs } from '../dispatch/autocast';
import { gradOf } from './grads/table';

export interface ScanOptions {
  /** Converts the input to this dtype first (as torch's `dtype=`); integers and bool otherwise give i64. */
  dtype?: DType;
}

function scanInput(op: string, x: Tensor, dim: number, options: ScanOptions | undefined): { input: Tensor; d: number } {
  checkTensor(op, 'input', x);
  checkOptions(op, options, ['dtype']);
  const d = normDim(op, dim, x.ndim);
  // An explicit dtype wins over autocast (which runs cumsum/cumprod in f32).
  const input = options?.dtype === undefined ? autocastArgs(op, x)[0] : castTo(x, toDType(op, options.dtype));
  return { input, d };
}

/** Running sums along `dim`: out[i] = x[0] + ... + x[i] (as torch.cumsum). */
export function cumsum(x: Tensor, dim: number, options?: ScanOptions): Tensor {
  const { input, d } = scanInput('cumsum', x, dim, options);
  const out = wrap(native.scan(input.handle, d, false, false));
  if (!isFloating(input.dtype)) return out;
  return record(out, 'cumsum', [input], (g) => gradOf('cumsum').grad(g, { dim: d }), { savesOutput: false });
}

/**
 * Running products along `dim`: out[i] = x[0]·...·x[i] (as torch.cumprod). The gradient is exact
 * where x holds zeros (no division by them), as torch's.
 */
export function cumprod(x: Tensor, dim: number, options?: ScanOptions): Tensor {
  const { input, d } = scanInput('cumprod', x, dim, options);
  const out = wrap(native.scan(input.handle, d, true, false));
  if (!isFloating(input.dtype)) return out;
  return record(out, 'cumprod', [input], (g) => gradOf('cumprod').grad(g, { input, dim: d }), { savesOutput: false });
}
