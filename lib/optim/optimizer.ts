/**
 * Optimizer: parameter groups (each with its own hyper-parameters), per-parameter state, zeroGrad
 * and state dicts, as torch.optim.Optimizer. Subclasses implement step().
 */
import { Tensor } from '../tensor';
import { keep } from '../memory';
import { zeroGrads } from '../autograd/zero_grad';
import { flockError } from '../errors';

export type ParamGroup<H> = H & { params: Tensor[] };
export type ParamsArg<H> = Tensor[] | Iterable<Tensor> | Array<Partial<H> & { params: Iterable<Tensor> }>;

export interface OptimizerStateDict {
  state: Record<number, Record<string, Tensor | number>>;
  paramGroups: Array<Record<string, unknown> & { params: number[] }>;
}

function argError(op: string, message: string): Error {
  return flockError('ERR_ARG', op, message);
}

export abstract class Optimizer<H extends { lr: number }> {
  readonly paramGroups: ParamGroup<H>[] = [];
  /** Per-parameter state (momentum buffers, moments, step counts). */
  readonly state = new Map<Tensor, Record<string, Tensor | number>>();

  constructor(params: ParamsArg<H>, readonly defaults: H) {
    const list = Array.from(params as Iterable<unknown>);
    if (list.length === 0) throw argError(this.constructor.name, 'optimizer got an empty parameter list');
    const groups = (list[0] instanceof Tensor ? [{ params: list as Tensor[] }] : list) as Array<Partial<H> & { params: Iterable<Tensor> }>;
    for (const g of groups) this.addParamGroup(g);
  }

  addParamGroup(group: Partial<H> & { params: Iterable<Tensor> }): void {
    const params = Array.from(group.params);
    const seen = new Set(this.paramGroups.flatMap((g) => g.params));
    for (const p of params) {
      if (!(p instanceof Tensor)) throw Object.assign(new TypeError(`${this.constructor.name}: params must be tensors`), { code: 'ERR_ARG' });
      if (seen.has(p)) throw argError(this.constructor.name, 'some parameters appear in more than one parameter group');
      seen.add(p);
    }
    const g = { ...this.defaults, ...group, params } as ParamGroup<H>;
    if (!(g.lr >= 0)) throw argError(this.constructor.name, `invalid learning rate ${g.lr}`);
    this.paramGroups.push(g);
  }

  /** Clears (setToNone, the default) or zeroes every parameter's gradient. */
  zeroGrad(setToNone = true): void {
    zeroGrads(this.paramGroups.flatMap((g) => g.params), setToNone);
  }

  abstract step(): void;

  /** Parameters are referred to by their index across all groups, as in PyTorch. */
  stateDict(): OptimizerStateDict {
    const index = new Map<Tensor, number>();
    const paramGroups = this.paramGroups.map((g) => {
      const { params, ...hyper } = g;
      return { ...hyper, params: params.map((p) => { const i = index.size; index.set(p, i); return i; }) };
    });
    const state: OptimizerStateDict['state'] = {};
    for (const [p, s] of this.state) {
      const i = index.get(p);
      if (i !== undefined) state[i] = { ...s };
    }
    return { state, paramGroups };
  }

  loadStateDict(sd: OptimizerStateDict): void {
    if (sd.paramGroups.length !== this.paramGroups.length)
      throw argError('loadStateDict', `the state dict has ${sd.paramGroups.length} parameter groups, the optimizer ${this.paramGroups.length}`);
    const byIndex: Tensor[] = [];
    sd.paramGroups.forEach((sg, gi) => {
      const own = this.paramGroups[gi];
      if (sg.params.length !== own.params.length)
        throw argError('loadStateDict', `parameter group ${gi} has ${sg.params.length} parameters in the state dict, ${own.params.length} in the optimizer`);
      sg.params.forEach((idx, k) => (byIndex[idx] = own.params[k]));
      const { params: _ignored, ...hyper } = sg;
      Object.assign(own, hyper);
    });
    this.state.clear();
    for (const [i, s] of Object.entries(sd.state)) {
      const p = byIndex[Number(i)];
      if (!p) throw argError('loadStateDict', `state for unknown parameter index ${i}`);
      const copy: Record<string, Tensor | number> = {};
      for (const [k, v] of Object.entries(s)) {
        if (v instanceof Tensor && (v.shape.length !== p.shape.length || v.shape.some((d, j) => d !== p.shape[j])) && v.numel() !== 1)
          throw Object.assign(new RangeError(`loadStateDict: state '${k}' of parameter ${i} has shape [${v.shape.join(',')}], parameter has [${p.shape.join(',')}]`), { code: 'ERR_SHAPE' });
        copy[k] = v instanceof Tensor ? keep(v.to(p.dtype).to(p.device).clone()) : v;
      }
      this.state.set(p, copy);
    }
  }
}
