/** Which cases cover which manifest ops: the harness and the perf mode share it. */
import { manifest, type OpDecl } from '../../../lib/manifest/index';
import { cases } from '../cases/index';
import { defaultCase } from './defaults';
import type { OpCase } from './types';

export interface Coverage {
  /** Manifest ops no case covers, hand-written or derived from the manifest (./defaults.ts). */
  missing: string[];
  /** Cases whose op the manifest does not declare. */
  unknown: string[];
  /** Every case with its op's declaration. */
  covered: { c: OpCase; decl: OpDecl }[];
}

export function coverage(
  ops: readonly OpDecl[] = manifest,
  hand: readonly OpCase[] = cases,
  derive: (decl: OpDecl) => OpCase | null = defaultCase,
): Coverage {
  const byName = new Map(ops.map((o) => [o.name, o]));
  const withHandCase = new Set(hand.map((c) => c.op));
  const derived = ops.filter((o) => !withHandCase.has(o.name)).flatMap((o) => derive(o) ?? []);
  const all = [...hand, ...derived];
  const withCase = new Set(all.map((c) => c.op));
  return {
    missing: ops.filter((o) => !withCase.has(o.name)).map((o) => o.name),
    unknown: all.filter((c) => !byName.has(c.op)).map((c) => c.op),
    covered: all.flatMap((c) => {
      const decl = byName.get(c.op);
      return decl ? [{ c, decl }] : [];
    }),
  };
}
