/** SGD with momentum, dampening, Nesterov and weight decay; one fused native call per group. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { keep } from '../memory';
import { zerosLike } from '../ops/creation';
import { Optimizer, type ParamsArg } from './optimizer';
import { errorOf } from '../errors';
import { bumpVersions } from '../autograd/version';

export interface SGDOptions {
  lr: number;
  momentum: number;
  dampening: number;
  weightDecay: number;
  nesterov: boolean;
}

export class SGD extends Optimizer<SGDOptions> {
  constructor(params: ParamsArg<SGDOptions>, options: Partial<SGDOptions> & { lr?: number } = {}) {
    const d: SGDOptions = { lr: 1e-3, momentum: 0, dampening: 0, weightDecay: 0, nesterov: false, ...options };
    if (d.nesterov && (d.momentum <= 0 || d.dampening !== 0))
      throw errorOf('ERR_ARG', 'SGD: Nesterov momentum requires a momentum and zero dampening');
    if (d.momentum < 0 || d.weightDecay < 0) throw errorOf('ERR_RANGE', 'SGD: momentum and weightDecay must be ≥ 0');
    super(params, d);
  }

  step(): void {
    for (const g of this.paramGroups) {
      // A momentum buffer's first step copies the gradient, later ones blend: one call for each kind.
      const batches = new Map<boolean, { ps: Tensor[]; gs: Tensor[]; bufs: Tensor[] }>();
      for (const p of g.params) {
        if (!p.grad) continue;
        let first = true;
        let buf: Tensor | null = null;
        if (g.momentum !== 0) {
          let s = this.state.get(p);
          if (!s) this.state.set(p, (s = {}));
          first = !s.momentumBuffer;
          if (first) s.momentumBuffer = keep(zerosLike(p));
          buf = s.momentumBuffer as Tensor;
        }
        let b = batches.get(first);
        if (!b) batches.set(first, (b = { ps: [], gs: [], bufs: [] }));
        b.ps.push(p);
        b.gs.push(p.grad);
        if (buf) b.bufs.push(buf);
      }
      for (const [first, b] of batches) {
        native.sgdStep(b.ps.map((t) => t.handle), b.gs.map((t) => t.handle), b.bufs.map((t) => t.handle),
          g.lr, g.momentum, g.dampening, g.weightDecay, g.nesterov, first);
        bumpVersions(`${this.constructor.name}.step`, b.ps);
      }
    }
  }
}
