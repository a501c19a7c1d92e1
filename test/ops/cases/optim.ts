/**
 * Cases for the fused optimizer steps and gradient clipping (lib/manifest/optim.ts): a
 * parameter and its gradient as inputs, three steps (the gradient kept), against f64 updates.
 */
import * as fl from '../../../lib/index';
import type { Tensor } from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr } from './ref';

const STEPS = 3;

function stepped(p: Tensor, g: Tensor, make: (ps: fl.nn.Parameter[]) => { step(): void }): Tensor {
  const param = new fl.nn.Parameter(p.clone());
  const opt = make([param]);
  for (let s = 0; s < STEPS; s++) {
    param.grad = g.clone();
    opt.step();
  }
  return param.detach();
}

interface AdamRef {
  lr: number;
  b1: number;
  b2: number;
  eps: number;
  wd: number;
  decoupled: boolean;
  amsgrad?: boolean;
}

function adamRef(p: Arr, g: Arr, o: AdamRef): Arr {
  const out = Float64Array.from(p.data);
  const m = new Float64Array(out.length),
    v = new Float64Array(out.length),
    vmax = new Float64Array(out.length);
  for (let t = 1; t <= STEPS; t++)
    for (let i = 0; i < out.length; i++) {
      let gi = g.data[i];
      if (o.decoupled) out[i] *= 1 - o.lr * o.wd;
      else gi += o.wd * out[i];
      m[i] = o.b1 * m[i] + (1 - o.b1) * gi;
      v[i] = o.b2 * v[i] + (1 - o.b2) * gi * gi;
      vmax[i] = Math.max(vmax[i], v[i]);
      const vh = (o.amsgrad ? vmax[i] : v[i]) / (1 - o.b2 ** t);
      out[i] -= (o.lr * (m[i] / (1 - o.b1 ** t))) / (Math.sqrt(vh) + o.eps);
    }
  return arr(p.shape, out);
}

function sgdRef(p: Arr, g: Arr, o: { lr: number; momentum: number; dampening: number; wd: number; nesterov: boolean }): Arr {
  const out = Float64Array.from(p.data);
  const buf = new Float64Array(out.length);
  for (let t = 1; t <= STEPS; t++)
    for (let i = 0; i < out.length; i++) {
      let d = g.data[i] + o.wd * out[i];
      if (o.momentum) {
        buf[i] = t === 1 ? d : o.momentum * buf[i] + (1 - o.dampening) * d;
        d = o.nesterov ? d + o.momentum * buf[i] : buf[i];
      }
      out[i] -= o.lr * d;
    }
  return arr(p.shape, out);
}

const pg = (shape: number[]) => [{ shape }, { shape }];
const TOL = { f32: [1e-5, 1e-6] as [number, number] };
const base = { sized: (n: number) => pg([n]), tol: TOL, nonContiguous: false };

function norm(vs: Float64Array, p: number): number {
  if (p === Infinity) return vs.reduce((a, v) => Math.max(a, Math.abs(v)), 0);
  return vs.reduce((a, v) => a + Math.abs(v) ** p, 0) ** (1 / p);
}

export const cases: OpCase[] = [
  {
    op: 'optim.SGD',
    inputs: pg([3, 4]),
    run: (p, g) => stepped(p, g, (ps) => new fl.optim.SGD(ps, { lr: 0.1 })),
    reference: (p, g) => sgdRef(p, g, { lr: 0.1, momentum: 0, dampening: 0, wd: 0, nesterov: false }),
    ...base,
  },
  {
    op: 'optim.SGD',
    label: 'momentum, dampening, weight decay',
    inputs: pg([5]),
    run: (p, g) => stepped(p, g, (ps) => new fl.optim.SGD(ps, { lr: 0.1, momentum: 0.9, dampening: 0.1, weightDecay: 0.01 })),
    reference: (p, g) => sgdRef(p, g, { lr: 0.1, momentum: 0.9, dampening: 0.1, wd: 0.01, nesterov: false }),
    ...base,
  },
  {
    op: 'optim.SGD',
    label: 'Nesterov',
    inputs: pg([5]),
    run: (p, g) => stepped(p, g, (ps) => new fl.optim.SGD(ps, { lr: 0.1, momentum: 0.9, nesterov: true })),
    reference: (p, g) => sgdRef(p, g, { lr: 0.1, momentum: 0.9, dampening: 0, wd: 0, nesterov: true }),
    ...base,
  },
  {
    op: 'optim.Adam',
    inputs: pg([3, 4]),
    run: (p, g) => stepped(p, g, (ps) => new fl.optim.Adam(ps, { lr: 0.01 })),
    reference: (p, g) => adamRef(p, g, { lr: 0.01, b1: 0.9, b2: 0.999, eps: 1e-8, wd: 0, decoupled: false }),
    ...base,
  },
  {
    op: 'optim.Adam',
    label: 'weight decay, betas, eps, amsgrad',
    inputs: pg([6]),
    run: (p, g) =>
      stepped(p, g, (ps) => new fl.optim.Adam(ps, { lr: 0.01, betas: [0.8, 0.9], eps: 1e-6, weightDecay: 0.1, amsgrad: true })),
    reference: (p, g) => adamRef(p, g, { lr: 0.01, b1: 0.8, b2: 0.9, eps: 1e-6, wd: 0.1, decoupled: false, amsgrad: true }),
    ...base,
  },
  {
    op: 'optim.AdamW',
    inputs: pg([3, 4]),
    run: (p, g) => stepped(p, g, (ps) => new fl.optim.AdamW(ps, { lr: 0.01, weightDecay: 0.1 })),
    reference: (p, g) => adamRef(p, g, { lr: 0.01, b1: 0.9, b2: 0.999, eps: 1e-8, wd: 0.1, decoupled: true }),
    ...base,
  },
  ...[2, 1, Infinity].map(
    (p): OpCase => ({
      op: 'optim.gradNorm',
      label: `normType ${p}`,
      inputs: [{ shape: [3, 4] }, { shape: [5] }],
      sized: (n) => [{ shape: [n] }, { shape: [2] }],
      run: (a, b) => {
        const ps = [a, b].map((t) => {
          const q = new fl.nn.Parameter(fl.zerosLike(t));
          q.grad = t.clone();
          return q;
        });
        return fl.optim.gradNorm(ps, p);
      },
      reference: (a, b) => arr([], [norm(Float64Array.from([...a.data, ...b.data]), p)]),
      tol: { f32: [1e-5, 1e-5], bf16: [2e-2, 2e-2], f16: [4e-3, 4e-3] },
      nonContiguous: false,
    }),
  ),
  {
    op: 'optim.clipGradNorm_',
    inputs: [{ shape: [3, 4] }, { shape: [5] }],
    sized: (n) => [{ shape: [n] }, { shape: [2] }],
    run: (a, b) => {
      const ps = [a, b].map((t) => {
        const q = new fl.nn.Parameter(fl.zerosLike(t));
        q.grad = t.clone();
        return q;
      });
      const total = fl.optim.clipGradNorm_(ps, 0.5);
      return [total, ...ps.map((q) => q.grad as Tensor)];
    },
    reference: (a, b) => {
      const total = norm(Float64Array.from([...a.data, ...b.data]), 2);
      const k = Math.min(1, 0.5 / (total + 1e-6));
      return [
        arr([], [total]),
        arr(
          a.shape,
          a.data.map((v) => v * k),
        ),
        arr(
          b.shape,
          b.data.map((v) => v * k),
        ),
      ];
    },
    tol: TOL,
    nonContiguous: false,
  },
  {
    op: 'optim.clipGradValue_',
    inputs: [{ shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }],
    run: (a) => {
      const q = new fl.nn.Parameter(fl.zerosLike(a));
      q.grad = a.clone();
      fl.optim.clipGradValue_([q], 0.7);
      return q.grad as Tensor;
    },
    reference: (a) =>
      arr(
        a.shape,
        a.data.map((v) => Math.min(Math.max(v, -0.7), 0.7)),
      ),
    nonContiguous: false,
  },
];
