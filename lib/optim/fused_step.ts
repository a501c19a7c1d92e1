/**
 * The batching every fused optimizer step shares (Adam/AdamW, RMSprop, Adagrad): a group's
 * parameters go to one native call per device and kind (f32/f64 updated in place, bf16/f16
 * through f32 masters) and, where the update depends on it, per step count (parameters differ in
 * steps only when some had no gradient on a step). Each call gets handles for the parameters, their
 * gradients, each per-parameter state list, the masters, and the stochastic-rounding draw.
 */
import type { NativeTensor } from '../native';
import { nextDraw } from '../random';
import type { Tensor } from '../tensor';
import { hasMaster, masterOf } from './optimizer';

/** One native call's worth of parameters, as handles. */
export interface FusedBatch<K extends string> {
  step: number;
  ps: NativeTensor[];
  gs: NativeTensor[];
  /** Each state list by name; a list a group does not use (e.g. Adam's amsgrad maxima) is empty. */
  lists: Record<K, NativeTensor[]>;
  masters: NativeTensor[];
  stochasticRounding: boolean;
  seed: number;
  offset: number;
}

/**
 * Batches `params` and calls `call` once per batch, returning the parameters of each call (for
 * the caller's version bump). `prepare(p)` creates or completes p's state, advances its step and
 * returns it with the state tensors that go to the call (absent for unused lists).
 */
export function fusedStep<K extends string>(
  params: readonly Tensor[],
  keys: readonly K[],
  o: { byStep: boolean; stochasticRounding: boolean },
  prepare: (p: Tensor) => { state: Record<string, Tensor | number>; step: number; lists: Partial<Record<K, Tensor>> },
  call: (b: FusedBatch<K>) => void,
): Tensor[][] {
  const batches = new Map<
    string,
    { step: number; ps: Tensor[]; gs: Tensor[]; lists: Record<K, Tensor[]>; masters: Tensor[]; numel: number }
  >();
  for (const p of params) {
    const { state, step, lists } = prepare(p);
    const key = `${o.byStep ? step : ''}/${p.device}/${hasMaster(p)}`;
    let b = batches.get(key);
    if (!b) {
      const empty = Object.fromEntries(keys.map((k) => [k, [] as Tensor[]])) as Record<K, Tensor[]>;
      batches.set(key, (b = { step, ps: [], gs: [], lists: empty, masters: [], numel: 0 }));
    }
    b.ps.push(p);
    b.gs.push(p.grad as Tensor);
    for (const k of keys) if (lists[k]) b.lists[k].push(lists[k] as Tensor);
    if (hasMaster(p)) b.masters.push(masterOf(p, state));
    b.numel += p.numel();
  }
  const h = (ts: Tensor[]) => ts.map((t) => t.handle);
  const out: Tensor[][] = [];
  for (const b of batches.values()) {
    const sr = o.stochasticRounding && b.masters.length > 0;
    const draw = sr ? nextDraw(b.numel) : { seed: 0, offset: 0 };
    const lists = Object.fromEntries(keys.map((k) => [k, h(b.lists[k])])) as Record<K, NativeTensor[]>;
    call({ step: b.step, ps: h(b.ps), gs: h(b.gs), lists, masters: h(b.masters), stochasticRounding: sr, ...draw });
    out.push(b.ps);
  }
  return out;
}
