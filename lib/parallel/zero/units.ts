/**
 * ZeRO stage 3's machinery, shared by FullyShardedDataParallel and DDP's `zeroStage: 3`: a model's
 * units (wrapped submodules), each parameter sharded on its own (as PyTorch's per-parameter FSDP):
 * laid flat, padded to a multiple of the world size and split into equal blocks, one per rank
 * (one {@link FlatSpace} per parameter). Between steps a rank holds only its blocks.
 *
 * A unit's parameters are all-gathered in one collective per dtype (every rank's segment holds its
 * block of each parameter, end to end) just before the unit runs and freed right after, and the
 * next unit's gather is issued while the current one computes (prefetch: the next unit of the
 * last forward's order, the list order before any forward). The gathers are ordered collectives,
 * so what follows them in the device's stream sees the gathered values.
 *
 * A node recorded on each unit call's output gathers the unit again when its gradient arrives
 * (before the unit's own backward nodes run) and issues the gather of the unit called before it;
 * the parameters' gradient hooks tell when the unit's backward is complete, and then its
 * gradients are reduce-scattered (averaged) and the gathered parameters freed. syncGradients()
 * awaits those and adds each parameter's averaged block into its block's `.grad`. A parameter
 * that got no gradient in a backward its unit took part in gets none (its block's `.grad` stays
 * null, so the optimizer leaves it alone, as in one process); the ranks must agree on which
 * units and parameters take part, since the collectives are matched in order.
 */
import { Tensor } from '../../tensor';
import { keep, tidy } from '../../memory';
import { isGradEnabled, noGrad } from '../../dispatch/grad_mode';
import { record } from '../../dispatch/record';
import { zeros } from '../../ops/creation';
import { cat } from '../../ops/shape';
import { argError, describe, flockError } from '../../errors';
import { type ProcessGroup, getRank, getWorldSize } from '../../distributed/process_group';
import * as dist from '../../distributed/process_group';
import { type Work, waitAll } from '../../distributed/work';
import { type FlatSpace, flatten, makeSpace, shardValues } from './layout';

/** Anything with parameters; how it runs is the caller's. */
export interface UnitLike {
  parameters(): Tensor[];
}

/** A unit's parameters of one dtype and device, gathered and reduced together. */
interface Bundle {
  spaces: FlatSpace[];
  /** Element offset of each space's block in a rank's segment; `per` is the segment's length. */
  offsets: number[];
  per: number;
  dtype: string;
  device: string;
}

interface UnitState {
  bundles: Bundle[];
  params: Tensor[];
  /** The ordered gathers issued (one [worldSize·per] per bundle), not yet adopted by the parameters, or null. */
  gathering: Tensor[] | null;
  materialized: boolean;
  /** In backward: the parameters whose gradient has not arrived yet; null outside the unit's backward. */
  pending: Set<Tensor> | null;
}

interface Scatter {
  work: Work;
  input: Tensor;
  out: Tensor;
  bundle: Bundle;
  /** The spaces of the bundle whose parameter got a gradient. */
  used: boolean[];
}

export class ShardedUnits {
  readonly rank: number;
  readonly worldSize: number;
  /** Every parameter's space (unit after unit, or in the order given to create) and this rank's block of each (what the optimizer steps). */
  readonly spaces: FlatSpace[] = [];
  readonly shards: Tensor[] = [];
  readonly #units: UnitState[];
  readonly #group: ProcessGroup | undefined;
  /** The all-gathers issued since the last sync (ordered: nobody awaits them unless a step fails). */
  #gathers: Work[] = [];
  readonly #prefetch: boolean;
  readonly #shardOf = new Map<FlatSpace, Tensor>();
  readonly #empty = new Map<string, Tensor>();
  /** Parameters left holding an empty `.grad` by the hook that completed their unit; cleared by sync(). */
  #emptied: Tensor[] = [];
  #scatters: Scatter[] = [];
  #removeHooks: (() => void)[] = [];
  /** Units in the order the current forward called them, and the last complete forward's order. */
  #order: number[] = [];
  #lastOrder: number[] = [];
  #inForward = false;
  /** gatherAll() has filled every unit, until the next forward or reshard: calls outside a forward use that. */
  #pinned = false;
  /** The root unit (the last in #units): parameters in no unit, gathered for a whole forward and its backward. */
  readonly #root: UnitState | null;
  /** The root was gathered by beginRoot() for the current forward. */
  #rootLive = false;

  private constructor(
    op: string,
    units: UnitLike[],
    group: ProcessGroup | undefined,
    prefetch: boolean,
    root: UnitLike | null,
    order: readonly Tensor[] | null,
  ) {
    this.#group = group;
    this.#prefetch = prefetch;
    this.rank = group ? group.rank : getRank();
    this.worldSize = group ? group.size : getWorldSize();
    const seen = new Set<Tensor>();
    this.#units = (root ? [...units, root] : units).map((u, i) => {
      const params = u.parameters().filter((p) => p.requiresGrad);
      for (const p of params) {
        if (seen.has(p)) throw argError(op, `a parameter [${p.shape.join(',')}] of unit ${i} also belongs to an earlier unit`);
        seen.add(p);
      }
      const byKind = new Map<string, FlatSpace[]>();
      for (const p of params) {
        const k = `${p.dtype}/${p.device}`;
        if (!byKind.has(k)) byKind.set(k, []);
        byKind.get(k)!.push(makeSpace(op, [p], this.worldSize));
      }
      const bundles = [...byKind.values()].map((spaces) => {
        const offsets: number[] = [];
        let per = 0;
        for (const s of spaces) {
          offsets.push(per);
          per += s.per;
        }
        this.spaces.push(...spaces);
        return { spaces, offsets, per, dtype: spaces[0].dtype, device: spaces[0].device };
      });
      return { bundles, params, gathering: null, materialized: true, pending: null };
    });
    this.#root = root ? this.#units[this.#units.length - 1] : null;
    if (order) {
      // State dicts number the parameters as `order` does (the model's), whatever the units' order.
      const at = new Map(order.map((p, i) => [p, i]));
      const rank = (sp: FlatSpace) => at.get(sp.params[0]) ?? Infinity;
      this.spaces.sort((a, b) => rank(a) - rank(b));
    }
  }

  /**
   * Shards `units`: every rank takes rank 0's parameter values, keeps its blocks and frees the rest.
   * `root` (as PyTorch FSDP's root unit) holds the parameters in no unit: it is gathered by
   * {@link beginRoot} for the whole forward and stays so until its backward is complete. `order`
   * (the model's parameters) orders {@link spaces}, and so the state dicts; else the units' order.
   */
  static async create(
    op: string,
    units: UnitLike[],
    group: ProcessGroup | undefined,
    prefetch: boolean,
    root: UnitLike | null = null,
    order: readonly Tensor[] | null = null,
  ): Promise<ShardedUnits> {
    const u = new ShardedUnits(op, units, group, prefetch, root, order);
    await Promise.all(u.spaces.map((s) => u.#broadcast(s.params[0]).wait()));
    for (const s of u.spaces) {
      const shard = shardValues(s, u.rank).requiresGrad_();
      u.shards.push(shard);
      u.#shardOf.set(s, shard);
    }
    for (const s of u.#units) {
      u.#free(s);
      for (const p of s.params) u.#removeHooks.push(p.registerHook((g) => u.#onGrad(s, p, g)));
    }
    return u;
  }

  /** The units, the root unit (when there is one) counted. */
  get unitCount(): number {
    return this.#units.length;
  }

  /** Units whose all-gather has been issued and not yet adopted by their parameters (the prefetched ones). */
  get gathersInFlight(): number {
    return this.#units.filter((s) => s.gathering !== null).length;
  }

  /** True between a backward and the syncGradients() that collects its reduce-scatters. */
  get unsynced(): boolean {
    // A root whose parameters got no gradient yet: its forward had no backward (or one it took no part in).
    const idle = (s: UnitState) => s === this.#root && s.pending?.size === s.params.length;
    return this.#scatters.length > 0 || this.#units.some((s) => s.pending && !idle(s));
  }

  /**
   * Starts a forward: refuses while the last backward is not synchronized, and drops what earlier
   * gathers hold (the optimizer may have changed the blocks since).
   */
  beginForward(op: string): void {
    if (this.unsynced)
      throw flockError('ERR_AUTOGRAD', op, "the last backward's gradients are not synchronized: await syncGradients() first");
    if (this.#root) this.#root.pending = null;
    this.#reshard();
    this.#pinned = false;
    this.#order = [];
    this.#inForward = true;
  }

  /** Gathers the root unit for the forward just begun (a no-op without one). */
  beginRoot(): void {
    if (!this.#root || !this.#inForward) return;
    this.#materialize(this.#root);
    this.#rootLive = true;
  }

  /**
   * Ends a forward: with grad on, the gather of the unit called last (the first backward needs) starts
   * now, and the root stays gathered until its parameters' gradients have all arrived; else it is freed.
   */
  endForward(out: unknown): void {
    if (!this.#inForward) return;
    this.#inForward = false;
    if (this.#rootLive && this.#root) {
      this.#rootLive = false;
      if (isGradEnabled() && requiresGrad(out) && this.#root.params.length) this.#root.pending = new Set(this.#root.params);
      else this.#free(this.#root);
    }
    if (this.#order.length) this.#lastOrder = this.#order;
    const last = this.#order[this.#order.length - 1];
    if (this.#prefetch && last !== undefined && isGradEnabled() && requiresGrad(out)) this.#startGather(this.#units[last]);
  }

  /**
   * Calls unit `k` (`run` computes its output) with its parameters gathered, then frees them.
   * Outside beginForward/endForward (a unit called on its own, for evaluation) nothing is prefetched,
   * and after gatherAll() the gathered values are used as they are, with no collective.
   */
  runUnit(op: string, k: number, run: () => unknown): unknown {
    // After gatherAll(), a call outside a forward (evaluation, maybe on one rank only) needs no collective.
    if (!this.#inForward && this.#pinned && this.#units[k].materialized) return run();
    const standalone = !this.#inForward;
    if (standalone) this.beginForward(op);
    const s = this.#units[k];
    const pos = this.#order.length;
    this.#order.push(k);
    this.#materialize(s);
    if (this.#prefetch && !standalone) {
      // The unit the last forward called next (the list's next before any forward completed).
      const next = this.#lastOrder.length ? (this.#lastOrder[pos] === k ? this.#lastOrder[pos + 1] : undefined) : k + 1;
      if (next !== undefined && next < this.#units.length && next !== k) this.#startGather(this.#units[next]);
    }
    let out: unknown;
    try {
      out = run();
    } finally {
      this.#free(s);
      if (standalone) this.#inForward = false;
    }
    if (out instanceof Tensor) return this.#beforeBackward(out, k, standalone ? -1 : pos);
    if (isGradEnabled() && requiresGrad(out))
      throw argError(op, `unit ${k} returned ${describe(out)}: a sharded unit that takes part in backward must return one Tensor`);
    return out;
  }

  /**
   * Awaits the reduce-scatters of the last backward and adds each parameter's averaged block into
   * its block's `.grad` (units some of whose parameters got no gradient are reduce-scattered now;
   * those parameters' blocks get none).
   */
  async sync(): Promise<void> {
    this.#clearEmptied();
    for (let k = this.#units.length - 1; k >= 0; k--) {
      const s = this.#units[k];
      // A root none of whose parameters got a gradient took no part in the backward: nothing to reduce.
      if (s === this.#root && s.pending?.size === s.params.length) {
        s.pending = null;
        this.#free(s);
      } else if (s.pending) this.#reduceUnit(s);
    }
    const scatters = this.#scatters;
    this.#scatters = [];
    const gathers = this.#gathers;
    this.#gathers = [];
    try {
      try {
        await waitAll(scatters.map((r) => r.work));
      } catch (e) {
        // A failed step (fail-stop): its gathers fail too, prefetched ones included. Let them all
        // settle, report them with this error, and drop what was prefetched: the next forward
        // gathers anew.
        await waitAll(gathers).catch(() => {});
        for (const s of this.#units) if (!s.materialized) this.#dropGather(s);
        throw e;
      }
      noGrad(() => {
        for (const r of scatters)
          r.bundle.spaces.forEach((sp, i) => {
            if (!r.used[i]) return;
            const shard = this.#shardOf.get(sp)!;
            const g = keep(
              tidy(() =>
                shard.grad
                  ? shard.grad.add(r.out.narrow(0, r.bundle.offsets[i], sp.per))
                  : r.out.narrow(0, r.bundle.offsets[i], sp.per).clone(),
              ),
            );
            shard.grad?.dispose();
            shard.grad = g;
          });
      });
    } finally {
      for (const r of scatters) {
        r.input.dispose();
        r.out.dispose();
      }
    }
  }

  /** Gathers every unit's parameters into the units' own tensors (for evaluation or saving) until the next forward. */
  gatherAll(): void {
    for (const s of this.#units) this.#startGather(s);
    for (const s of this.#units) this.#materialize(s);
    this.#pinned = true;
  }

  /** Drops gathers made before the blocks changed (a load), freeing the parameters; the next forward gathers again. */
  reshard(): void {
    this.#reshard();
    this.#pinned = false;
  }

  /** Frees the shards and the gathered parameters and removes the gradient hooks; the units' tensors keep what they hold now. */
  dispose(): void {
    for (const r of this.#removeHooks) r();
    this.#removeHooks = [];
    for (const r of this.#scatters) {
      r.input.dispose();
      r.out.dispose();
    }
    this.#scatters = [];
    for (const s of this.#units) {
      this.#dropGather(s);
      s.pending = null;
    }
    for (const t of this.shards) {
      t.grad?.dispose();
      t.dispose();
    }
    for (const t of this.#empty.values()) t.dispose();
    this.#empty.clear();
  }

  #reshard(): void {
    for (const s of this.#units) {
      this.#dropGather(s);
      if (s.materialized) this.#free(s);
    }
  }

  /** `out` passed on unchanged, with a node that gathers unit `k` when its gradient arrives. */
  #beforeBackward(out: Tensor, k: number, pos: number): Tensor {
    if (!out.requiresGrad || !isGradEnabled()) return out;
    const order = this.#order;
    return record(
      out.detach(),
      'ShardedUnitBackward',
      [out],
      (g) => {
        // The engine has added the empty gradients of the units completed so far (another backward may follow).
        this.#clearEmptied();
        const s = this.#units[k];
        this.#materialize(s);
        if (!s.pending && s.params.length) s.pending = new Set(s.params);
        const before = pos > 0 ? order[pos - 1] : undefined;
        if (this.#prefetch && before !== undefined && before !== k) this.#startGather(this.#units[before]);
        return [g];
      },
      { savesOutput: false },
    );
  }

  #clearEmptied(): void {
    for (const p of this.#emptied) {
      p.grad?.dispose();
      p.grad = null;
    }
    this.#emptied = [];
  }

  /**
   * A parameter's gradient `g` is final. When it is the last of its unit, the unit's backward is
   * complete: its gradients (`g` for this one, which the engine has not added yet) are
   * reduce-scattered, its parameters freed, and the hook hands the engine an empty gradient to add.
   */
  #onGrad(s: UnitState, p: Tensor, g: Tensor): Tensor | undefined {
    if (!s.pending?.delete(p) || s.pending.size > 0) return undefined;
    this.#reduceUnit(s, p, g);
    this.#emptied.push(p);
    return this.#empty.get(`${p.dtype}/${p.device}`);
  }

  /**
   * Reduce-scatters the unit's gradients (every rank's segment: its block of each parameter's
   * padded flat gradient, end to end) and frees its parameters and their gradients.
   */
  #reduceUnit(s: UnitState, last?: Tensor, g?: Tensor): void {
    const missing = s.pending ?? new Set<Tensor>();
    s.pending = null;
    for (const b of s.bundles) {
      const N = this.worldSize;
      const input = keep(
        tidy(() => {
          const parts = b.spaces.map((sp) => flatten(sp, (p) => (p === last ? g!.to(sp.dtype as 'f32') : p.grad)).reshape([N, sp.per]));
          return (parts.length === 1 ? parts[0] : cat(parts, 1)).reshape([-1]);
        }),
      );
      const out = keep(zeros([b.per], { dtype: b.dtype as 'f32', device: b.device }));
      const used = b.spaces.map((sp) => !missing.has(sp.params[0]));
      this.#scatters.push({ work: this.#reduceScatter(out, input), input, out, bundle: b, used });
    }
    for (const p of s.params) {
      p.grad?.dispose();
      p.grad = null;
    }
    this.#free(s);
  }

  /** Issues the ordered all-gathers of `s`'s blocks: the ops queued after them see the full values. */
  #startGather(s: UnitState): void {
    if (s.gathering || s.materialized) return;
    s.gathering = s.bundles.map((b) => {
      const full = keep(zeros([b.per * this.worldSize], { dtype: b.dtype as 'f32', device: b.device }));
      const mine = keep(
        noGrad(() =>
          tidy(() =>
            b.spaces.length === 1
              ? this.#shardOf.get(b.spaces[0])!.detach()
              : cat(
                  b.spaces.map((sp) => this.#shardOf.get(sp)!.detach()),
                  0,
                ),
          ),
        ),
      );
      // Finished ones are forgotten (a forward-only loop never syncs).
      this.#gathers = this.#gathers.filter((w) => !w.isCompleted());
      this.#gathers.push(
        this.#group ? this.#group.allGather(full, mine, { ordered: true }) : dist.allGather(full, mine, { ordered: true }),
      );
      // An ordered collective keeps what it reads alive until it has run.
      mine.dispose();
      return full;
    });
  }

  #dropGather(s: UnitState): void {
    for (const f of s.gathering ?? []) f.dispose();
    s.gathering = null;
  }

  /** Points `s`'s parameters at their gathered values (issuing the gathers if no prefetch did). */
  #materialize(s: UnitState): void {
    if (s.materialized) return;
    this.#startGather(s);
    const fulls = s.gathering!;
    try {
      noGrad(() =>
        tidy(() =>
          s.bundles.forEach((b, i) => {
            const byRank = fulls[i].reshape([this.worldSize, b.per]);
            b.spaces.forEach((sp, j) => {
              const p = sp.params[0];
              const flat = b.spaces.length === 1 ? fulls[i] : byRank.narrow(1, b.offsets[j], sp.per).reshape([-1]);
              p._adopt(flat.narrow(0, 0, sp.numel).reshape(sp.shapes[0]));
            });
          }),
        ),
      );
      s.materialized = true;
    } finally {
      this.#dropGather(s);
    }
  }

  /** Releases the unit's gathered parameters: each tensor keeps its identity, holding nothing. */
  #free(s: UnitState): void {
    for (const p of s.params) {
      const key = `${p.dtype}/${p.device}`;
      let e = this.#empty.get(key);
      if (!e) this.#empty.set(key, (e = keep(zeros([0], { dtype: p.dtype as 'f32', device: p.device }))));
      p._adopt(e);
    }
    s.materialized = false;
  }

  #broadcast(p: Tensor): Work {
    return this.#group ? this.#group.broadcast(p, 0) : dist.broadcast(p, { src: 0 });
  }

  #reduceScatter(out: Tensor, input: Tensor): Work {
    return this.#group ? this.#group.reduceScatter(out, input, { op: 'avg' }) : dist.reduceScatter(out, input, { op: 'avg' });
  }
}

/** Whether `v` (a tensor, or arrays and plain objects of them) holds a tensor that requires grad. */
function requiresGrad(v: unknown): boolean {
  if (v instanceof Tensor) return v.requiresGrad;
  if (Array.isArray(v)) return v.some(requiresGrad);
  if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) return Object.values(v).some(requiresGrad);
  return false;
}
