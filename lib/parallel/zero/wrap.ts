/**
 * DDP's `zeroStage: 3`: the model's units (its children, or the `units` option) are sharded by
 * {@link ShardedUnits}, and each unit's `forward` is wrapped on the instance (as PyTorch FSDP wraps
 * submodules), so the user's own forward function, calling the units however it likes, runs each
 * with its parameters gathered just for that call. A ModuleList or ModuleDict child is not called
 * itself: its children are the units.
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
   * Finds the units of `module` (or takes `units`), checks that they hold every trainable parameter
   * of `params`, shards them and wraps their forwards.
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
    const loose = params.filter((p) => !covered.has(p));
    if (loose.length)
      throw argError(
        op,
        `zeroStage 3 shards parameters per unit, and ${loose.length} parameter(s) (${loose
          .slice(0, 4)
          .map((p) => `[${p.shape.join(',')}]`)
          .join(', ')}) belong to no unit: move them into a submodule, or list units that hold them in the units option`,
      );
    const core = await ShardedUnits.create(op, list, group, prefetch);
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
