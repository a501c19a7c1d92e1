/**
 * In-place version counters. Every write into a tensor's storage in place (copy_, optimizer steps)
 * bumps the counter that the tensor shares with its views; a graph node remembers the versions of
 * what it saved and refuses to run backward on changed values (see Node.check).
 */
import type { Tensor } from '../tensor';
import { flockError } from '../errors';
import { isGradEnabled } from './grad_mode';

export interface VersionCounter {
  /** How many in-place writes the storage has had. */
  value: number;
  /** The op of the latest one, for messages. */
  op: string;
}

export function versionOf(t: Tensor): VersionCounter {
  return t._version;
}

/** Records an in-place write by `op` into each of `tensors` (already checked, e.g. under noGrad). */
export function bumpVersions(op: string, tensors: Iterable<Tensor>): void {
  for (const t of tensors) {
    const c = t._version;
    c.value++;
    c.op = op;
  }
}

/**
 * Throws unless `op` may write into `t` in place now. Outside noGrad a tensor that requires grad
 * may not be written: a leaf's gradient would describe values it no longer has, and in-place ops
 * are not recorded, so a non-leaf's history would be wrong (PyTorch raises for leaves and records
 * the op for non-leaves). Call {@link bumpVersions} once the write is queued.
 */
export function checkInPlace(op: string, t: Tensor): void {
  if (!isGradEnabled() || !t.requiresGrad) return;
  throw flockError(
    'ERR_AUTOGRAD',
    op,
    t.isLeaf
      ? 'a leaf tensor that requires grad cannot be modified in place outside noGrad; wrap the write in noGrad(() => ...)'
      : `a tensor that requires grad (made by ${t.gradFn!.name}) cannot be modified in place outside noGrad: in-place ops are not recorded by autograd; build a new tensor instead`,
  );
}

const bases = new WeakMap<Tensor, Tensor>();

/** Makes `view` share the version counter of `base`, whose storage it aliases. */
export function shareVersion<T extends Tensor>(view: T, base: Tensor): T {
  view._version = base._version;
  if (view !== base) bases.set(view, bases.get(base) ?? base);
  return view;
}

/** The tensor whose storage `t` aliases (reshape, view, leading-dim narrow), or undefined. */
export function baseOf(t: Tensor): Tensor | undefined {
  return bases.get(t);
}
