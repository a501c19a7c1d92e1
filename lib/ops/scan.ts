/** Cumulative sums and products along a dim (cumsum, cumprod), and their gradients. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { type DType, isFloating, toDType } from '../dtype';
import { checkOptions } from '../errors';
import { castTo, checkTensor, normDim, wrap } from './util';
import { autocastArgs } from '../dispatch/autocast';

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
  // The gradient of a running sum is the running sum of the gradient taken from the end.
  return record(out, 'cumsum', [input], (g) => [wrap(native.scan(g.handle, d, false, true))], { savesOutput: false });
}

/**
 * Running products along `dim`: out[i] = x[0]·...·x[i] (as torch.cumprod). The gradient is exact
 * where x holds zeros (no division by them), as torch's.
 */
export function cumprod(x: Tensor, dim: number, options?: ScanOptions): Tensor {
  const { input, d } = scanInput('cumprod', x, dim, options);
  const out = wrap(native.scan(input.handle, d, true, false));
  if (!isFloating(input.dtype)) return out;
  return record(out, 'cumprod', [input], (g) => [wrap(native.cumprodBackward(input.handle, g.handle, d))], { savesOutput: false });
}
