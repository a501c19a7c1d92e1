/**
 * Gradient formulas keyed by the manifest's op name, one table per op family in this folder (as
 * PyTorch's derivatives.yaml): the ops generated with their kernel (lib/manifest/ `kernel`) and the
 * hand-written ops whose gradient is a formula. A formula gets the upstream gradient and what the
 * op had (its output and its arguments) and returns one gradient per tensor input, in order; it is
 * built from differentiable ops, so the gradient is itself differentiable. An op looks its formula
 * up when it records (gradOf), so this file imports no op.
 */
import type { Tensor } from '../../tensor';
import { flockError } from '../../errors';

/**
 * What each op hands its formula, by op name: declared by lib/ops/generated/kernel_ops.ts for the
 * kernel ops and, for a hand-written op, beside its formulas (declaration merging).
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging
export interface GradContexts {}

export interface GradFormula<C> {
  /** Whether `grad` reads `ctx.out`: an in-place write to the output before backward then throws. */
  readonly savesOutput?: boolean;
  grad(g: Tensor, ctx: C): (Tensor | null)[];
}

export type GradTable = { [K in keyof GradContexts]?: GradFormula<GradContexts[K]> };

const table: GradTable = {};

/** Registers a family's formulas (its file in lib/ops/grads/ calls this once). */
export function defineGrads(formulas: GradTable): void {
  Object.assign(table, formulas);
}

/** The op's formula; the manifest test checks that every op declaring one has it registered. */
export function gradOf<K extends keyof GradContexts>(op: K): GradFormula<GradContexts[K]> {
  const f = table[op];
  if (!f) throw flockError('ERR_INTERNAL', op, 'no gradient formula is registered (lib/ops/grads/)');
  return f as GradFormula<GradContexts[K]>;
}

/** The ops with a registered formula. */
export function registeredGrads(): string[] {
  return Object.keys(table);
}
