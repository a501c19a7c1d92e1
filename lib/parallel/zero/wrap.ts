/**
 * DDP's `zeroStage: 3`: the model's units (its children, or the `units` option) are sharded by
 * {@link ShardedUnits}, and each unit's `forward` is wrapped on the instance (as PyTorch FSDP wraps
 * submodules), so the user's own forward function, calling the units however it likes, runs each
 * with its parameters gathered just for that call. A ModuleList or ModuleDict child is not called
 * itself: its children are the units. Trainable parameters in no unit (the model's own, say) form
 * the root unit, as in PyTorch FSDP: gathered when the forward begins and freed when their
 * gradients have all arrived in backward (or at the forward's end when no backward can follow).
 */
import type { Tensor } from '../../tensor';
import { ModuleDict, ModuleList } from '../../nn/container';
import { argError, describe } from '../../errors';
import type { ProcessGroup } from '../../distributed/process_group';
import { ShardedUnits } from './units';

/** A unit of DDP's zeroStage 3: a module whose `forward` the model's forward calls. */
export interface ForwardUnit {
  parameters(): Tensor[];
  // biome-ignore lint/suspicious/noExplicitAny: any module's forward
  forward(...args: any[]): unknown;
}

export class WrappedUnits {
  readonly core: ShardedUnits;
  readonly #restore: (() => void)[];

  private constructor(core: ShardedUnits, restore: (() => void)[]) {
    this.core = core;
    this.#restore = restore;
  }

  /**
   * Finds the units of `module` (or takes `units`), puts the trainable parameters of `params` that
   * none holds in a root unit, shards them and wraps the units' forwards.
   */
  static async create(
    op: string,
    module: unknown,
    params: Tensor[],
    units: unknown,
    group: ProcessGroup | undefined,
    prefetch: boolean,
  ): Promise<WrappedUnits> {
    const list = units === undefined ? childUnits(op, module) : checkUnits(op, units);
    const covered = new Set(list.flatMap((u) => u.parameters()));
    const loose = params.filter((p) => p.requiresGrad && !covered.has(p));
    const core = await ShardedUnits.create(op, list, group, prefetch, loose.length ? { parameters: () => loose } : null, params);
    const restore = list.map((u, k) => {
      const own = Object.hasOwn(u, 'forward');
      const orig = u.forward;
      u.forward = (...args: unknown[]) => core.runUnit(`${op}.forward`, k, () => orig.apply(u, args));
      return () => {
        if (own) u.forward = orig;
        else delete (u as { forward?: unknown }).forward;
      };
    });
    return new WrappedUnits(core, restore);
  }

  /** Runs the user's forward: units it calls gather their parameters; the one called last is gathered again for backward. */
  forward<T>(op: string, run: () => T): T {
    this.core.beginForward(op);
    let out: T | undefined;
    try {
      this.core.beginRoot();
      out = run();
      return out;
    } finally {
      this.core.endForward(out);
    }
  }

  /** Puts the units' own forwards back and frees the shards. */
  dispose(): void {
    for (const r of this.#restore) r();
    this.#restore.length = 0;
    this.core.dispose();
  }
}

function checkUnits(op: string, units: unknown): ForwardUnit[] {
  if (!Array.isArray(units) || units.length === 0) throw argError(op, `units must be a non-empty array of modules, got ${describe(units)}`);
  units.forEach((u, i) => {
    const v = u as Partial<ForwardUnit> | null;
    if (!v || typeof v !== 'object' || typeof v.parameters !== 'function' || typeof v.forward !== 'function')
      throw argError(op, `units[${i}] must have parameters() and forward(), got ${describe(u)}`);
  });
  if (new Set(units).size !== units.length) throw argError(op, 'a unit appears twice in units');
  return units as ForwardUnit[];
}

/** The module's children, a ModuleList's or ModuleDict's replaced by their own children. */
function childUnits(op: string, module: unknown): ForwardUnit[] {
  const m = module as { children?: () => Iterable<unknown> };
  if (!m || typeof m.children !== 'function')
    throw argError(
      op,
      `zeroStage 3 shards the model per unit: pass an nn.Module (its children are the units) or the units option, got ${describe(module)}`,
    );
  const out: ForwardUnit[] = [];
  const visit = (c: unknown) => {
    if (c instanceof ModuleList || c instanceof ModuleDict) for (const g of c.children()) visit(g);
    else out.push(c as ForwardUnit);
  };
  for (const c of m.children()) visit(c);
  if (out.length === 0) throw argError(op, 'zeroStage 3: the model has no children to shard; pass the units option');
  return checkUnits(op, out);
}
