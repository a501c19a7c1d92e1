/**
 * The gradient formulas of the ops whose functions are generated with their kernel (lib/manifest/
 * `kernel`), one table per kernel family in this folder (as PyTorch's derivatives.yaml), each
 * registered here under the manifest's op name. A formula gets the upstream gradient and what the
 * op had (its output and its arguments) and returns one gradient per tensor argument, in order;
 * it is built from differentiable ops, so the gradient is itself differentiable. The generated
 * function looks its formula up when it records (gradOf), so this file imports no op.
 */
import type { Tensor } from '../../tensor';
import { flockError } from '../../errors';
import type { KernelOpGradContexts } from '../generated/kernel_ops';

export interface GradFormula<C> {
  /** Whether `grad` reads `ctx.out`: an in-place write to the output before backward then throws. */
  readonly savesOutput?: boolean;
  grad(g: Tensor, ctx: C): (Tensor | null)[];
}

export type GradTable = { [K in keyof KernelOpGradContexts]?: GradFormula<KernelOpGradContexts[K]> };

const table: GradTable = {};

/** Registers a family's formulas (its file in lib/ops/grads/ calls this once). */
export function defineGrads(formulas: GradTable): void {
  Object.assign(table, formulas);
}

/** The op's formula; the manifest test checks that every op declaring one has it registered. */
export function gradOf<K extends keyof KernelOpGradContexts>(op: K): GradFormula<KernelOpGradContexts[K]> {
  const f = table[op];
  if (!f) throw flockError('ERR_INTERNAL', op, 'no gradient formula is registered (lib/ops/grads/)');
  return f as GradFormula<KernelOpGradContexts[K]>;
}

/** The ops with a registered formula. */
export function registeredGrads(): string[] {
  return Object.keys(table);
}
