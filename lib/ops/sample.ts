/**
 * Random permutations and categorical draws from the global Philox generator (fl.manualSeed):
 * the same seed gives the same values on the CPU and on CUDA.
 */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { type DType, checkValueFits, isFloating, toDType } from '../dtype';
import { checkOptions, describe } from '../errors';
import { normalizeDevice } from '../device';
import { nextDraw } from '../random';
import { checkTensor, rangeError, typeError, held, wrap } from './util';

/**
 * A random permutation of 0..n-1 (i64 unless `dtype` says), as torch.randperm: the order of
 * 62-bit Philox keys, ties (about n²/2⁶³ likely) kept in index order.
 */
export function randperm(n: number, options?: { dtype?: DType; device?: string }): Tensor {
  checkOptions('randperm', options, ['dtype', 'device']);
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
    throw rangeError('randperm', `n must be a non-negative integer, got ${describe(n)}`, 'ERR_RANGE');
  const dtype = options?.dtype === undefined ? 'i64' : toDType('randperm', options.dtype);
  if (dtype === 'bool') throw typeError('randperm', 'dtype bool cannot hold a permutation', 'ERR_DTYPE');
  if (n > 0) checkValueFits('randperm', n - 1, dtype);
  const device = normalizeDevice(options?.device, 'randperm');
  // Two 31-bit draws make one key: hi·2³¹ + lo.
  const part = () => {
    const { seed, offset } = nextDraw(n);
    return wrap(native.random('randint', [n], 'i64', device, seed, offset, 0, 2 ** 31));
  };
  const hi = part(),
    lo = part();
  const scale = wrap(native.full([], 'i64', device, 2 ** 31));
  const keys = wrap(native.binary('add', held(native.binary('mul', hi.handle, scale.handle)), lo.handle));
  const [v, order] = native.sort(keys.handle, 0, false);
  native.dispose(v);
  const out = wrap(order);
  return dtype === 'i64' ? out : wrap(native.cast(out.handle, dtype));
}

/**
 * Category indices (i64) drawn from each row of `probs` ([categories] or [rows, categories]; non-negative
 * weights, not necessarily summing to 1), as torch.multinomial: `numSamples` per row, with or without
 * replacement. The weights must be finite and non-negative, each row's sum positive and, without
 * replacement, at least numSamples of a row non-zero. On the CPU they are checked on the stream
 * with the draw, so bad weights reject the next sync point with ERR_RANGE (as an out-of-range
 * index does) and sampling never waits for queued work; on CUDA the check reads a few numbers back
 * (a sync point), as torch's CPU check does.
 */
export function multinomial(probs: Tensor, numSamples: number, replacement = false): Tensor {
  checkTensor('multinomial', 'input', probs);
  if (!isFloating(probs.dtype)) throw typeError('multinomial', `probabilities must be floating point, got ${probs.dtype}`, 'ERR_DTYPE');
  if (probs.ndim !== 1 && probs.ndim !== 2)
    throw rangeError('multinomial', `probabilities must be 1-D or 2-D, got shape [${probs.shape.join(',')}]`);
  if (typeof numSamples !== 'number' || !Number.isInteger(numSamples) || numSamples <= 0)
    throw rangeError('multinomial', `numSamples must be a positive integer, got ${describe(numSamples)}`, 'ERR_RANGE');
  if (typeof replacement !== 'boolean') throw typeError('multinomial', `replacement must be a boolean, got ${describe(replacement)}`);
  const rows = probs.ndim === 1 ? 1 : probs.shape[0];
  const c = probs.shape[probs.ndim - 1];
  if (c === 0) throw rangeError('multinomial', 'there are no categories to draw from');
  if (!replacement && numSamples > c)
    throw rangeError('multinomial', `cannot draw ${numSamples} samples without replacement from ${c} categories`, 'ERR_RANGE');
  const p2 = wrap(native.reshape(probs.handle, [rows, c]));
  if (rows > 0 && !p2.device.startsWith('cpu')) checkWeights(p2, numSamples, replacement);
  const { seed, offset } = nextDraw(rows * (replacement ? numSamples : c));
  const out = wrap(native.multinomial(p2.handle, numSamples, replacement, seed, offset));
  return probs.ndim === 1 ? wrap(native.reshape(out.handle, [numSamples])) : out;
}

/** Weights must be finite and non-negative, each row's sum positive, and enough of them non-zero. */
function checkWeights(p: Tensor, numSamples: number, replacement: boolean): void {
  const d = p.device;
  const f64 = wrap(native.cast(p.handle, 'f64'));
  const zero = wrap(native.full([], 'f64', d, 0));
  const stats = [
    native.reduce('min', f64.handle, [], false),
    native.reduce('sum', f64.handle, [], false), // inf or NaN anywhere shows here
    native.reduce('min', held(native.reduce('sum', f64.handle, [1], false)), [], false),
    native.reduce(
      'min',
      held(native.reduce('sum', held(native.cast(held(native.binary('gt', f64.handle, zero.handle)), 'f64')), [1], false)),
      [],
      false,
    ),
  ].map((h) => wrap(h));
  const [low, total, rowSum, positive] = Array.from(
    wrap(
      native.cat(
        stats.map((s) => held(native.reshape(s.handle, [1]))),
        0,
      ),
    ).dataSync() as Float64Array,
  );
  if (!Number.isFinite(total)) throw rangeError('multinomial', 'probabilities must be finite (got inf or NaN)', 'ERR_RANGE');
  if (low < 0) throw rangeError('multinomial', `probabilities must be non-negative, got ${low}`, 'ERR_RANGE');
  if (!(rowSum > 0)) throw rangeError('multinomial', 'every row of probabilities must have a positive sum', 'ERR_RANGE');
  if (!replacement && positive < numSamples)
    throw rangeError(
      'multinomial',
      `cannot draw ${numSamples} samples without replacement: a row has only ${positive} non-zero probabilities`,
      'ERR_RANGE',
    );
}
