/**
 * Default conformance cases derived from the manifest: an element-wise op (unary family with shape
 * 'same', binary family with shape 'broadcast') whose entry gives a `reference` on f64 scalars is
 * covered without a hand case: inputs drawn from its `domain` (default [-2, 2]) at [3, 4] (with a
 * broadcast [4] operand for binary ops), swept over the odd sizes, run through `fl.<name>` in every
 * dtype the entry declares, and gradient-checked when its gradient is not 'none'. An op with neither
 * a hand case nor a derivable default stays missing, and the harness fails for it.
 */
import * as fl from '../../../lib/index';
import type { Tensor } from '../../../lib/index';
import type { OpDecl } from '../../../lib/manifest/index';
import { map, zip } from '../cases/ref';
import type { InputSpec, OpCase } from './types';

type Op = (...xs: Tensor[]) => Tensor;

/** The user-facing function of the op, when lib/index.ts exports one by its manifest name. */
function userFunction(name: string): Op | null {
  const f = (fl as unknown as Record<string, unknown>)[name];
  return typeof f === 'function' ? (f as Op) : null;
}

/** The derived case of `decl`, or null when its entry does not give one (no reference, not element-wise). */
export function defaultCase(decl: OpDecl, lookup: (name: string) => Op | null = userFunction): OpCase | null {
  const ref = decl.reference;
  if (!ref) return null;
  const run = lookup(decl.name);
  if (!run) return null;
  const [low, high] = decl.domain ?? [-2, 2];
  const spec = (shape: number[]): InputSpec => ({ shape, low, high });
  const base = { op: decl.name, label: 'derived from the manifest', run, exact: decl.output !== undefined };
  const tensors = decl.args.filter((a) => a.type === 'tensor' || a.type === 'tensor|number');
  const rest = decl.args.filter((a) => !tensors.includes(a));
  // Further arguments must have defaults: the default case calls the op with its tensors only.
  if (rest.some((a) => !('default' in a))) return null;
  if (decl.family === 'unary' && decl.shape === 'same' && tensors.length === 1)
    return { ...base, inputs: [spec([3, 4])], sized: (n) => [spec([n])], reference: (x) => map(x, (v) => ref(v)) };
  if (decl.family === 'binary' && decl.shape === 'broadcast' && tensors.length === 2)
    return {
      ...base,
      inputs: [spec([3, 4]), spec([4])],
      sized: (n) => [spec([n]), spec([1])],
      reference: (a, b) => zip(a, b, (x, y) => ref(x, y)),
    };
  return null;
}
