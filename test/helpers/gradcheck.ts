/** Numerical gradient checks in f64: analytic gradients from backward() against central differences. */
import * as fl from '../../lib/index';
import type { Tensor } from '../../lib/index';
import { values } from './values';

export interface GradcheckOptions {
  eps?: number;
  atol?: number;
  rtol?: number;
}

/**
 * Checks d(Σ w·f(inputs))/d(input) for every float input, with w a fixed random weighting so
 * every output element matters. Returns the worst mismatch message, or null when all agree.
 */
export function gradcheck(f: (xs: Tensor[]) => Tensor, inputs: Tensor[], opts: GradcheckOptions = {}): string | null {
  const eps = opts.eps ?? 1e-6,
    atol = opts.atol ?? 1e-5,
    rtol = opts.rtol ?? 1e-4;
  const leaves = inputs.map((x) =>
    x.dtype === 'f64' ? fl.tensor(Float64Array.from(values(x)), { dtype: 'f64', shape: [...x.shape] }).requiresGrad_() : x,
  );
  const out = f(leaves);
  const w = fl.randn([...out.shape], { dtype: 'f64' });
  const weighted = (o: Tensor) => o.mul(w).sum().itemSync();
  out.mul(w).sum().backward();
  for (let k = 0; k < leaves.length; k++) {
    const leaf = leaves[k];
    if (leaf.dtype !== 'f64') continue;
    const analytic = leaf.grad ? values(leaf.grad) : new Array<number>(leaf.numel()).fill(0);
    const base = values(leaf);
    for (let i = 0; i < base.length; i++) {
      const probe = (delta: number) => {
        const v = Float64Array.from(base);
        v[i] += delta;
        const xs = leaves.map((l, j) => (j === k ? fl.tensor(v, { dtype: 'f64', shape: [...leaf.shape] }) : l.detach()));
        return fl.noGrad(() => weighted(f(xs)));
      };
      const numeric = (probe(eps) - probe(-eps)) / (2 * eps);
      const diff = Math.abs(numeric - analytic[i]);
      if (!(diff <= atol + rtol * Math.abs(numeric))) return `input ${k} element ${i}: analytic ${analytic[i]} vs numeric ${numeric}`;
    }
  }
  return null;
}

/** f64 random tensor; `positive` keeps values away from 0 for log/sqrt-like ops. */
export function rnd(shape: number[], opts: { positive?: boolean; scale?: number } = {}): Tensor {
  const t = fl.randn(shape, { dtype: 'f64' }).mul(opts.scale ?? 1);
  return opts.positive ? t.abs().add(0.5) : t;
}
