/** Gradient clipping in place: by total norm (returned) or by value. */
import type { Tensor } from '../tensor';
import { noGrad } from '../autograd/grad_mode';
import { copy_ } from '../ops/elementwise';
import { stack } from '../ops/shape';
import { full } from '../ops/creation';
import { tidy } from '../memory';
import { native } from '../native';
import { rangeError, wrap } from '../ops/util';

function grads(params: Iterable<Tensor>): Tensor[] {
  return Array.from(params).flatMap((p) => (p.grad ? [p.grad] : []));
}

/**
 * The `normType`-norm of all gradients together, as a 0-d tensor (no sync): one fused native
 * kernel per device and dtype, combined on the first gradient's device.
 */
export function gradNorm(params: Iterable<Tensor>, normType = 2): Tensor {
  return normOf(grads(params), normType);
}

function normOf(list: Tensor[], normType: number): Tensor {
  if (typeof normType !== 'number' || !(normType > 0)) throw rangeError('gradNorm', `normType must be > 0 or Infinity, got ${normType}`, 'ERR_RANGE');
  const groups = byDeviceAndDtype(list);
  return noGrad(() => tidy(() => {
    if (!groups.length) return full([], 0);
    const norms = groups.map((g) => wrap(native.gradNorm(g.map((t) => t.handle), normType)));
    if (norms.length === 1) return norms[0];
    const first = norms[0];
    const on = norms.map((n) => n.to(first.device).to('f64'));
    const total = normType === Infinity ? stack(on).max() : stack(on).pow(normType).sum().pow(1 / normType);
    return total.to('f32');
  }));
}

/**
 * Scales all gradients so their combined `normType`-norm is at most maxNorm; returns the norm
 * before clipping as a 0-d tensor (no sync: the scale is computed on the device).
 */
export function clipGradNorm_(params: Iterable<Tensor>, maxNorm: number, normType = 2): Tensor {
  if (typeof maxNorm !== 'number' || !(maxNorm >= 0) || maxNorm === Infinity)
    throw rangeError('clipGradNorm_', `maxNorm must be a finite number ≥ 0, got ${maxNorm}`, 'ERR_RANGE');
  const list = grads(params);
  const total = normOf(list, normType);
  noGrad(() => tidy(() => {
    for (const g of byDeviceAndDtype(list)) {
      const t = total.device === g[0].device && total.dtype === g[0].dtype ? total : total.to(g[0].device).to(g[0].dtype);
      native.clipByNorm(g.map((x) => x.handle), t.handle, maxNorm);
    }
  }));
  return total;
}

function byDeviceAndDtype(ts: Tensor[]): Tensor[][] {
  const groups = new Map<string, Tensor[]>();
  for (const t of ts) {
    const key = `${t.device}/${t.dtype}`;
    const g = groups.get(key);
    if (g) g.push(t);
    else groups.set(key, [t]);
  }
  return [...groups.values()];
}

export function clipGradValue_(params: Iterable<Tensor>, clipValue: number): void {
  noGrad(() => tidy(() => {
    for (const g of grads(params)) copy_(g, g.clamp(-clipValue, clipValue));
  }));
}
