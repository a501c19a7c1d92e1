/** Gradient clipping in place: by total norm (returned) or by value. */
import { Tensor } from '../tensor';
import { noGrad } from '../dispatch/grad_mode';
import { copy_ } from '../ops/elementwise';
import { stack } from '../ops/shape';
import { full } from '../ops/creation';
import { tidy } from '../memory';
import { native } from '../native';
import { wrap } from '../ops/util';
import { argError, describe, flockError } from '../errors';
import { checkNumber } from '../validate';

/** The gradients of `params` (a tensor or an iterable of tensors, as PyTorch takes), checked as `op`. */
function grads(op: string, params: Iterable<Tensor> | Tensor): Tensor[] {
  if (params instanceof Tensor) params = [params];
  else if (params === null || typeof params !== 'object' || typeof (params as Iterable<Tensor>)[Symbol.iterator] !== 'function')
    throw argError(op, `params must be a tensor or an iterable of tensors, got ${describe(params)}`);
  const out: Tensor[] = [];
  let i = 0;
  for (const p of params as Iterable<unknown>) {
    if (!(p instanceof Tensor)) throw argError(op, `params[${i}] must be a Tensor, got ${describe(p)}`);
    const g = p.grad;
    if (g?.isDisposed) throw flockError('ERR_DISPOSED', op, `the gradient of params[${i}] has been disposed`);
    if (g) out.push(g);
    i++;
  }
  return out;
}

function checkNormType(op: string, normType: unknown): number {
  return checkNumber(op, 'normType', normType, { above: 0, infinite: true });
}

/**
 * The `normType`-norm of all gradients together, as a 0-d tensor (no sync): one fused native
 * kernel per device and dtype, combined on the first gradient's device.
 */
export function gradNorm(params: Iterable<Tensor> | Tensor, normType = 2): Tensor {
  const list = grads('gradNorm', params);
  return normOf(list, checkNormType('gradNorm', normType));
}

function normOf(list: Tensor[], normType: number): Tensor {
  const groups = byDeviceAndDtype(list);
  return noGrad(() =>
    tidy(() => {
      if (!groups.length) return full([], 0);
      const norms = groups.map((g) =>
        wrap(
          native.gradNorm(
            g.map((t) => t.handle),
            normType,
          ),
        ),
      );
      if (norms.length === 1) return norms[0];
      const first = norms[0];
      const on = norms.map((n) => n.to(first.device).to('f64'));
      const total =
        normType === Infinity
          ? stack(on).max()
          : stack(on)
              .pow(normType)
              .sum()
              .pow(1 / normType);
      return total.to('f32');
    }),
  );
}

/**
 * Scales all gradients so their combined `normType`-norm is at most maxNorm; returns the norm
 * before clipping as a 0-d tensor (no sync: the scale is computed on the device).
 */
export function clipGradNorm_(params: Iterable<Tensor> | Tensor, maxNorm: number, normType = 2): Tensor {
  checkNumber('clipGradNorm_', 'maxNorm', maxNorm, { min: 0 });
  checkNormType('clipGradNorm_', normType);
  const list = grads('clipGradNorm_', params);
  const total = normOf(list, normType);
  noGrad(() =>
    tidy(() => {
      for (const g of byDeviceAndDtype(list)) {
        const t = total.device === g[0].device && total.dtype === g[0].dtype ? total : total.to(g[0].device).to(g[0].dtype);
        native.clipByNorm(
          g.map((x) => x.handle),
          t.handle,
          maxNorm,
        );
      }
    }),
  );
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

/** Clamps every gradient to [−clipValue, clipValue] in place. */
export function clipGradValue_(params: Iterable<Tensor> | Tensor, clipValue: number): void {
  checkNumber('clipGradValue_', 'clipValue', clipValue, { min: 0, infinite: true });
  const list = grads('clipGradValue_', params);
  noGrad(() =>
    tidy(() => {
      for (const g of list) copy_(g, g.clamp(-clipValue, clipValue));
    }),
  );
}
