/** Gradient clipping in place: by total norm (returned) or by value. */
import type { Tensor } from '../tensor';
import { noGrad } from '../autograd/grad_mode';
import { copy_, reciprocal } from '../ops/elementwise';
import { stack } from '../ops/shape';
import { full } from '../ops/creation';
import { tidy } from '../memory';

function grads(params: Iterable<Tensor>): Tensor[] {
  return Array.from(params).flatMap((p) => (p.grad ? [p.grad] : []));
}

/**
 * Scales all gradients so their combined `normType`-norm is at most maxNorm; returns the norm
 * before clipping as a 0-d tensor (no sync: the scale is computed on the device).
 */
export function clipGradNorm_(params: Iterable<Tensor>, maxNorm: number, normType = 2): Tensor {
  const gs = grads(params);
  // tidy: the per-tensor norms and the scale are temporaries; only the total survives.
  return noGrad(() => tidy(() => {
    if (!gs.length) return full([], 0);
    let total: Tensor;
    if (normType === Infinity) total = stack(gs.map((g) => g.abs().max())).max();
    else total = stack(gs.map((g) => g.abs().pow(normType).sum())).sum().pow(1 / normType);
    const coef = reciprocal(total.add(1e-6)).mul(maxNorm).clamp(null, 1);
    for (const g of gs) copy_(g, g.mul(coef.to(g.dtype)));
    return total;
  }));
}

export function clipGradValue_(params: Iterable<Tensor>, clipValue: number): void {
  noGrad(() => tidy(() => {
    for (const g of grads(params)) copy_(g, g.clamp(-clipValue, clipValue));
  }));
}
