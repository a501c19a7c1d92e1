/**
 * Normalisation. Layer norm runs the native layer_norm kernel with its affine fused (one pass for
 * the statistics, one for the output; mean and 1/std kept for backward); group norm runs the same
 * kernel without an affine and applies its per-channel one after; batch norm, whose statistics run across the
 * batch, is a composition of reductions and element-wise ops. Variances are biased, as PyTorch's.
 */
import { native } from '../../native';
import type { Tensor } from '../../tensor';
import { record } from '../../dispatch/record';
import { noGrad } from '../../dispatch/grad_mode';
import { copy_ } from '../../ops/elementwise';
import { shapeStr, wrap } from '../../ops/util';
import { isFloating } from '../../dtype';
import { checkOptions, flockError } from '../../errors';
import { checkBool, checkNumber, checkOptionalTensor, checkSizes } from '../../validate';
import { tensorArg } from './args';
import { autocastArgs } from '../../dispatch/autocast';

const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Reshapes a per-channel vector [C] to broadcast over dim 1 of an n-D input. */
function perChannel(v: Tensor, ndim: number): Tensor {
  return v.reshape([1, v.shape[0], ...Array(Math.max(0, ndim - 2)).fill(1)]);
}

// bf16/f16 rows are normalised in f32 by the native front end (statistics kept in f32), rounded once.
const nativeDtype = (t: Tensor): boolean => t.dtype === 'f32' || t.dtype === 'f64' || t.dtype === 'bf16' || t.dtype === 'f16';

/**
 * Layer norm of each row of `x` [rows, d] with the affine (`w`, `b` [d], each optional) fused into
 * the native kernel, forward and backward (dweight and dbias are column sums in the same call).
 * Dtypes the kernel does not take (or parameters of another dtype) run as composed ops.
 */
function layerNormRows(op: string, x: Tensor, w: Tensor | null, b: Tensor | null, eps: number): Tensor {
  if (!nativeDtype(x) || (w && w.dtype !== x.dtype) || (b && b.dtype !== x.dtype)) {
    let y = x.sub(x.mean(1, true)).mul(x.var(1, { correction: 0, keepdim: true }).add(eps).rsqrt());
    if (w) y = y.mul(w);
    if (b) y = y.add(b);
    return y;
  }
  const [y, mean, rstd] = native.layerNorm(x.handle, w?.handle ?? null, b?.handle ?? null, eps).map(wrap);
  const inputs = [x, ...(w ? [w] : []), ...(b ? [b] : [])];
  return record(
    y,
    op,
    inputs,
    (g) => {
      const [gx, gw, gb] = native.layerNormBackward(
        x.handle,
        mean.handle,
        rstd.handle,
        w?.handle ?? null,
        g.handle,
        !!w?.requiresGrad,
        !!b?.requiresGrad,
      );
      const grads: (Tensor | null)[] = [wrap(gx)];
      if (w) grads.push(gw ? wrap(gw) : null);
      if (b) grads.push(gb ? wrap(gb) : null);
      return grads;
    },
    { savesOutput: false },
  );
}

function floatInput(op: string, x: unknown): Tensor {
  const t = tensorArg(op, 'input', x);
  if (!isFloating(t.dtype)) throw flockError('ERR_DTYPE', op, `input must be a floating tensor, got ${t.dtype}`);
  return t;
}

/** An optional affine/statistics tensor that must have exactly `shape`. */
function shaped(op: string, name: string, v: unknown, shape: readonly number[]): Tensor | null {
  const t = checkOptionalTensor(op, name, v);
  if (t && (t.ndim !== shape.length || t.shape.some((s, i) => s !== shape[i])))
    throw flockError('ERR_SHAPE', op, `${name} must be ${shapeStr(shape)}, got ${shapeStr(t.shape)}`);
  if (t && !isFloating(t.dtype)) throw flockError('ERR_DTYPE', op, `${name} must be a floating tensor, got ${t.dtype}`);
  return t;
}

export interface BatchNormOptions {
  weight?: Tensor | null;
  bias?: Tensor | null;
  training?: boolean;
  /** Weight of the batch statistics in the running ones: running = (1 − momentum)·running + momentum·batch. */
  momentum?: number;
  eps?: number;
}

const BATCH_NORM_KEYS = ['weight', 'bias', 'training', 'momentum', 'eps'] as const;

/**
 * Batch normalisation over every dim but 1. In training the batch statistics normalise and the
 * running ones are updated in place with the unbiased variance; otherwise the running ones are used.
 */
export function batchNorm(x: Tensor, runningMean: Tensor | null, runningVar: Tensor | null, options: BatchNormOptions = {}): Tensor {
  const o = checkOptions('batchNorm', options, BATCH_NORM_KEYS);
  if ((o.momentum as unknown) === null)
    throw flockError(
      'ERR_ARG',
      'batchNorm',
      'momentum null (a cumulative average) needs the batch count; use nn.BatchNorm1d/2d, or pass the factor 1/n yourself',
    );
  return batchNormWith('batchNorm', x, runningMean, runningVar, {
    weight: o.weight,
    bias: o.bias,
    training: o.training,
    eps: o.eps,
    factor: checkNumber('batchNorm', 'momentum', o.momentum ?? 0.1, { min: 0, max: 1 }),
  });
}

/**
 * @internal batchNorm checked as `op`, with the running-statistics factor as a number or a 0-d
 * tensor (BatchNorm's cumulative average, 1/numBatchesTracked, stays on the device).
 */
export function batchNormWith(
  op: string,
  x: unknown,
  runningMean: unknown,
  runningVar: unknown,
  o: { weight?: unknown; bias?: unknown; training?: unknown; eps?: unknown; factor: number | Tensor },
): Tensor {
  [x] = autocastArgs('nn.functional.batchNorm', x);
  const t = floatInput(op, x);
  if (t.ndim < 2) throw flockError('ERR_SHAPE', op, `expected an input of at least 2 dims [N, C, …], got ${shapeStr(t.shape)}`);
  const c = t.shape[1];
  const rm = shaped(op, 'runningMean', runningMean, [c]);
  const rv = shaped(op, 'runningVar', runningVar, [c]);
  if (!rm !== !rv) throw flockError('ERR_ARG', op, 'runningMean and runningVar must be given together (or both null)');
  const weight = shaped(op, 'weight', o.weight, [c]);
  const bias = shaped(op, 'bias', o.bias, [c]);
  const training = checkBool(op, 'training', o.training ?? false);
  const eps = checkNumber(op, 'eps', o.eps ?? 1e-5, { min: 0 });
  const dims = t.shape.map((_, i) => i).filter((i) => i !== 1);
  let mean: Tensor, variance: Tensor;
  if (training || !rm || !rv) {
    const n = numel(t.shape) / c;
    if (training && n <= 1)
      throw flockError('ERR_SHAPE', op, `expected more than 1 value per channel when training, got input ${shapeStr(t.shape)}`);
    mean = t.mean(dims, true);
    variance = t.var(dims, { correction: 0, keepdim: true });
    if (training && rm && rv) {
      const f = o.factor;
      noGrad(() => {
        const bm = mean.reshape([c]).to(rm.dtype),
          bv = variance
            .reshape([c])
            .mul(n / Math.max(n - 1, 1))
            .to(rv.dtype);
        // (1 − f)·running + f·batch; a tensor factor stays on the device.
        const blend = (r: Tensor, b: Tensor) =>
          typeof f === 'number' ? r.mul(1 - f).add(b.mul(f)) : r.mul(f.to(r.dtype).neg().add(1)).add(b.mul(f.to(r.dtype)));
        copy_(rm, blend(rm, bm));
        copy_(rv, blend(rv, bv));
      });
    }
  } else {
    mean = perChannel(rm, t.ndim);
    variance = perChannel(rv, t.ndim);
  }
  let y = t.sub(mean).mul(variance.add(eps).rsqrt());
  if (weight) y = y.mul(perChannel(weight, t.ndim));
  if (bias) y = y.add(perChannel(bias, t.ndim));
  return y;
}

/** Normalises over the trailing `normalizedShape` dims, then applies the elementwise affine. */
export function layerNorm(x: Tensor, normalizedShape: number | number[], weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Tensor {
  return layerNormWith('layerNorm', x, checkSizes('layerNorm', 'normalizedShape', normalizedShape, 0), weight, bias, eps);
}

/** @internal layerNorm checked as `op`. */
export function layerNormWith(op: string, x: unknown, normalizedShape: number[], weight: unknown, bias: unknown, eps: unknown): Tensor {
  [x, weight, bias] = autocastArgs('nn.functional.layerNorm', x, weight, bias);
  const t = floatInput(op, x);
  const k = normalizedShape.length;
  const tail = t.shape.slice(t.ndim - k);
  if (k > t.ndim || tail.some((s, i) => s !== normalizedShape[i]))
    throw flockError(
      'ERR_SHAPE',
      op,
      `normalizedShape ${shapeStr(normalizedShape)} does not match the trailing dims of input ${shapeStr(t.shape)}`,
    );
  const w = shaped(op, 'weight', weight, normalizedShape);
  const b = shaped(op, 'bias', bias, normalizedShape);
  const e = checkNumber(op, 'eps', eps, { min: 0 });
  const d = numel(normalizedShape);
  const rows = t.reshape([numel(t.shape) / Math.max(d, 1), d]);
  return layerNormRows(op, rows, w?.reshape([d]) ?? null, b?.reshape([d]) ?? null, e).reshape([...t.shape]);
}

/** Normalises channels in `numGroups` groups per sample; affine per channel. */
export function groupNorm(x: Tensor, numGroups: number, weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Tensor {
  return groupNormWith('groupNorm', x, numGroups, weight, bias, eps);
}

/** @internal groupNorm checked as `op`. */
export function groupNormWith(op: string, x: unknown, numGroups: unknown, weight: unknown, bias: unknown, eps: unknown): Tensor {
  [x, weight, bias] = autocastArgs('nn.functional.groupNorm', x, weight, bias);
  const t = floatInput(op, x);
  if (t.ndim < 2) throw flockError('ERR_SHAPE', op, `expected an input of at least 2 dims [N, C, …], got ${shapeStr(t.shape)}`);
  const c = t.shape[1];
  const groups = checkNumber(op, 'numGroups', numGroups, { integer: true, min: 1 });
  if (c % groups !== 0)
    throw flockError('ERR_SHAPE', op, `input ${shapeStr(t.shape)} has ${c} channels, not divisible by numGroups ${groups}`);
  const w = shaped(op, 'weight', weight, [c]);
  const b = shaped(op, 'bias', bias, [c]);
  const e = checkNumber(op, 'eps', eps, { min: 0 });
  const rows = t.shape[0] * groups;
  let y = layerNormRows(op, t.reshape([rows, numel(t.shape) / Math.max(rows, 1)]), null, null, e).reshape([...t.shape]);
  if (w) y = y.mul(perChannel(w, t.ndim));
  if (b) y = y.add(perChannel(b, t.ndim));
  return y;
}
