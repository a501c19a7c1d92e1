/**
 * Model parallelism: sub-modules placed on different devices. Each placed sub-module's parameters
 * and buffers move to its device, and its forward first copies its tensor arguments there, so
 * activations cross devices on the way forward and their gradients cross back in backward (the
 * copies are recorded by autograd like any op). Work queued on different devices runs on their
 * own streams, so independent branches overlap.
 *
 *   fl.parallel.placeModule(model, { encoder: 'cuda:0', head: 'cuda:1' });
 *   const out = model.forward(x);   // on cuda:1
 */
import { Tensor } from '../tensor';
import { normalizeDevice } from '../device';
import { Module } from '../nn/module';
import { argError, describe, flockError } from '../errors';

const PLACED = Symbol('flockml.placed');

type Placed = Module & { [PLACED]?: { device: string; forward: (...a: unknown[]) => unknown } };

/**
 * Moves each named sub-module (dotted names as in namedModules(); '' is the whole model, a default
 * for what no other entry covers) to its device; a longer name wins over its parent's. Every
 * parameter must end up covered by some entry. Calling it again re-places the model. Returns the
 * model.
 */
export function placeModule<M extends Module>(model: M, placement: Record<string, string>): M {
  const op = 'placeModule';
  if (!(model instanceof Module)) throw argError(op, `model must be an nn.Module, got ${describe(model)}`);
  if (placement === null || typeof placement !== 'object' || Array.isArray(placement))
    throw argError(op, `placement must be an object of devices by sub-module name, got ${describe(placement)}`);
  const modules = new Map(model.namedModules());
  const entries = Object.entries(placement).map(([name, d]) => {
    if (!modules.has(name))
      throw argError(op, `no sub-module named '${name}'; sub-modules: ${[...modules.keys()].filter(Boolean).join(', ') || 'none'}`);
    return [name, normalizeDevice(d, op)] as const;
  });
  if (entries.length === 0) throw argError(op, 'placement names no sub-module');
  const covering = (name: string): string | undefined => {
    let best: string | undefined;
    for (const [k] of entries)
      if ((k === '' || name === k || name.startsWith(`${k}.`)) && (best === undefined || k.length > best.length)) best = k;
    return best;
  };
  const uncovered = [...model.namedParameters()].filter(([n]) => covering(n) === undefined).map(([n]) => n);
  if (uncovered.length)
    throw flockError(
      'ERR_ARG',
      op,
      `parameters ${uncovered.join(', ')} are on no placed sub-module; add an entry for them (or '' for the rest)`,
    );
  // Outermost first, so that an inner entry's move comes after (and overrides) its parent's.
  for (const [name, device] of [...entries].sort((a, b) => a[0].length - b[0].length)) {
    const m = modules.get(name)! as Placed;
    m.to(device);
    const original = m[PLACED]?.forward ?? (m.forward as (...a: unknown[]) => unknown);
    m[PLACED] = { device, forward: original };
    (m as unknown as { forward: (...a: unknown[]) => unknown }).forward = (...args: unknown[]) =>
      original.apply(
        m,
        args.map((a) => (a instanceof Tensor ? a.to(device) : a)),
      );
  }
  return model;
}

/** The device `placeModule` put `m` on, or undefined. */
export function placement(m: Module): string | undefined {
  if (!(m instanceof Module)) throw argError('placement', `m must be a Module, got ${describe(m)}`);
  return (m as Placed)[PLACED]?.device;
}
