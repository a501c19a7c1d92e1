/**
 * ZeroRedundancyOptimizer state: consolidated (every parameter's whole state, in the layout of a
 * plain optimizer's stateDict(), so it loads into one and back into ZeRO at any world size) and
 * sharded (each rank writes its blocks with lib/io/sharded.ts; the files load into any world size,
 * each rank reading only the pieces it now owns).
 */
import { Tensor } from '../../tensor';
import { keep, tidy } from '../../memory';
import { noGrad } from '../../dispatch/grad_mode';
import { cat } from '../../ops/shape';
import { full, zeros } from '../../ops/creation';
import { copy_ } from '../../ops/elementwise';
import type { Optimizer, OptimizerStateDict } from '../../optim/optimizer';
import { argError, describe, flockError } from '../../errors';
import { type Shard, loadSharded, readShardIndex, saveSharded } from '../../io/sharded';
import { inspect } from '../../io/safetensors';
import { join } from 'node:path';
import { allGather } from '../../distributed/process_group';
import { type FlatSpace, ownedRange } from './layout';
import type { ZeroRedundancyOptimizer } from './optimizer';

type State = Record<string, Tensor | number>;
// biome-ignore lint/suspicious/noExplicitAny: any optimizer's hyper-parameters
type Zero = ZeroRedundancyOptimizer<any>;

/** What sharded save and load need: the flat spaces, this rank's blocks, and the optimizer stepping them (if any). */
export interface ShardOwner {
  readonly spaces: readonly FlatSpace[];
  readonly shards: readonly Tensor[];
  // biome-ignore lint/suspicious/noExplicitAny: any optimizer's hyper-parameters
  readonly optimizer: Optimizer<any> | null;
  readonly rank: number;
  readonly worldSize: number;
  /** Called once the blocks hold the loaded values. */
  afterLoad(): Promise<void>;
}

const numelOf = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

const stateError = (op: string, detail: string) => flockError('ERR_STATE_DICT', op, detail);

async function gathered(z: Zero, s: FlatSpace, block: Tensor): Promise<Tensor> {
  const out = keep(zeros([s.per * s.worldSize], { dtype: block.dtype, device: block.device }));
  const g = z._group;
  await (g ? g.allGather(out, block) : allGather(out, block)).wait();
  return out;
}

/**
 * Every parameter's whole optimizer state, as a plain optimizer's stateDict() (parameters
 * numbered across groups). A collective: every rank must call it, and every rank gets it.
 */
export async function consolidatedStateDict(z: Zero): Promise<OptimizerStateDict> {
  const local = z.optimizer.stateDict();
  const index = new Map(z._params.map((p, i) => [p, i]));
  const state: OptimizerStateDict['state'] = {};
  for (let si = 0; si < z.spaces.length; si++) {
    const s = z.spaces[si];
    const mine = z.optimizer.state.get(z.shards[si]);
    if (!mine) continue;
    const per: State[] = s.params.map(() => ({}));
    for (const [k, v] of Object.entries(mine)) {
      if (typeof v === 'number') {
        for (const st of per) st[k] = v;
        continue;
      }
      const flat = await gathered(z, s, v);
      noGrad(() =>
        s.params.forEach((_, i) => {
          per[i][k] = keep(tidy(() => flat.narrow(0, s.offsets[i], numelOf(s.shapes[i])).reshape(s.shapes[i]).clone()));
        }),
      );
      flat.dispose();
    }
    s.params.forEach((p, i) => {
      state[index.get(p)!] = per[i];
    });
  }
  // Parameters numbered as the user's groups list them.
  let at = 0;
  const sizes = z._paramCounts();
  const paramGroups = local.paramGroups.map((g, gi) => {
    const ids = Array.from({ length: sizes[gi] }, (_, k) => at + k);
    at += sizes[gi];
    return { ...g, params: ids };
  });
  return { state, paramGroups };
}

/**
 * Loads a consolidated state dict (from {@link consolidatedStateDict} at any world size, or a plain
 * optimizer's stateDict() over the same parameters): each rank keeps its blocks.
 */
export function loadConsolidated(z: Zero, sd: OptimizerStateDict): void {
  const op = 'ZeroRedundancyOptimizer.loadStateDict';
  if (!sd || typeof sd !== 'object' || !Array.isArray(sd.paramGroups) || !sd.state || typeof sd.state !== 'object')
    throw argError(op, `expected a state dict { state, paramGroups }, got ${describe(sd)}`);
  const sizes = z._paramCounts();
  if (sd.paramGroups.length !== sizes.length)
    throw stateError(op, `the state dict has ${sd.paramGroups.length} parameter groups, the optimizer ${sizes.length}`);
  const byParam = new Map<Tensor, State>();
  let k0 = 0;
  sd.paramGroups.forEach((g, gi) => {
    if (!g || !Array.isArray(g.params) || g.params.length !== sizes[gi])
      throw stateError(
        op,
        `parameter group ${gi} has ${describe(g?.params?.length)} parameters in the state dict, ${sizes[gi]} in the optimizer`,
      );
    g.params.forEach((idx, k) => {
      const s = sd.state[idx];
      if (s) byParam.set(z._params[k0 + k], s);
    });
    k0 += sizes[gi];
  });
  const made: Tensor[] = [];
  const localState: OptimizerStateDict['state'] = {};
  try {
    z.spaces.forEach((s, si) => {
      const states = s.params.map((p) => byParam.get(p));
      if (states.every((st) => !st)) return;
      if (states.some((st) => !st))
        throw stateError(op, `some parameters of flat space ${si} have state and others none; ZeRO steps a block as a whole`);
      const keys = Object.keys(states[0]!).sort().join(',');
      const out: State = {};
      for (const key of Object.keys(states[0]!)) {
        const vals = states.map((st, i) => {
          if (Object.keys(st!).sort().join(',') !== keys)
            throw stateError(op, `the parameters of flat space ${si} have different state entries (${keys} vs ${Object.keys(st!).sort()})`);
          const v = st![key];
          if (typeof v !== 'number' && !(v instanceof Tensor)) throw stateError(op, `state '${key}' of parameter ${i} is ${describe(v)}`);
          return v;
        });
        if (vals.every((v) => typeof v === 'number')) {
          if (new Set(vals).size !== 1)
            throw stateError(
              op,
              `'${key}' differs between parameters of flat space ${si} (${[...new Set(vals)].join(', ')}); ZeRO steps a block as a whole`,
            );
          out[key] = vals[0];
          continue;
        }
        const ts = vals as Tensor[];
        ts.forEach((t, i) => {
          if (!(t instanceof Tensor) || t.numel() !== numelOf(s.shapes[i]))
            throw flockError(
              'ERR_SHAPE',
              op,
              `state '${key}' of a parameter [${s.shapes[i].join(',')}] is ${t instanceof Tensor ? `[${t.shape.join(',')}]` : describe(t)}`,
            );
        });
        const block = keep(
          noGrad(() =>
            tidy(() => {
              const pad = s.per * s.worldSize - s.numel;
              const parts = ts.map((t) => t.reshape([-1]).to(ts[0].dtype).to(ts[0].device));
              if (pad > 0) parts.push(zeros([pad], { dtype: ts[0].dtype, device: ts[0].device }));
              return cat(parts, 0)
                .narrow(0, z.rank * s.per, s.per)
                .clone();
            }),
          ),
        );
        made.push(block);
        out[key] = block;
      }
      localState[si] = out;
    });
    const own = z.optimizer.stateDict();
    z.optimizer.loadStateDict({
      state: remapToLocal(z, localState),
      paramGroups: own.paramGroups.map((g, gi) => ({ ...g, ...withoutParams(sd.paramGroups[gi]) })),
    });
  } finally {
    for (const t of made) t.dispose();
  }
}

function withoutParams(g: Record<string, unknown>): Record<string, unknown> {
  const { params: _p, ...rest } = g;
  return rest;
}

/** Space index -> the local optimizer's index of that space's block. */
function remapToLocal(
  z: { shards: readonly Tensor[]; optimizer: Optimizer<{ lr: number }> },
  bySpace: OptimizerStateDict['state'],
): OptimizerStateDict['state'] {
  const order = z.optimizer.paramGroups.flatMap((g) => g.params);
  const out: OptimizerStateDict['state'] = {};
  for (const [si, st] of Object.entries(bySpace)) out[order.indexOf(z.shards[Number(si)])] = st;
  return out;
}

/** This rank's pieces of the parameters and optimizer state, keyed per flat space, for saveSharded. */
export function shardedState(z: ShardOwner): Record<string, Tensor | Shard> {
  const out: Record<string, Tensor | Shard> = {};
  z.spaces.forEach((s, si) => {
    const [a, b] = ownedRange(s, z.rank);
    const piece = (t: Tensor) => ({ tensor: t.narrow(0, 0, b - a), shape: [s.numel], start: a });
    out[`space${si}.param`] = piece(z.shards[si].detach());
    for (const [k, v] of Object.entries(z.optimizer?.state.get(z.shards[si]) ?? {}))
      out[`space${si}.${k}`] = typeof v === 'number' ? full([1], v, { dtype: 'f64' }) : piece(v);
  });
  return out;
}

/** Writes this rank's blocks (and rank 0 the index). A collective. */
export async function saveZeroSharded(z: ShardOwner, dir: string, prefix = 'optim'): Promise<void> {
  const state = shardedState(z);
  const hyper = z.optimizer?.stateDict().paramGroups.map(withoutParams);
  try {
    await saveSharded(dir, state, { prefix, metadata: hyper ? { 'flockml.zero.paramGroups': JSON.stringify(hyper) } : {} });
  } finally {
    for (const v of Object.values(state)) (v instanceof Tensor ? v : v.tensor).dispose();
  }
}

/**
 * Loads blocks saved by {@link saveZeroSharded} from any world size: each rank reads the pieces of
 * its own blocks, then the parameters are all-gathered. A collective.
 */
export async function loadZeroSharded(z: ShardOwner, dir: string, prefix = 'optim'): Promise<void> {
  const op = 'ZeroRedundancyOptimizer.loadSharded';
  const index = await readShardIndex(dir, prefix);
  // Read onto the blocks' device (a model on one device: spaces share it).
  const loaded = await loadSharded(dir, { rank: z.rank, worldSize: z.worldSize, prefix, device: z.spaces[0]?.device ?? 'cpu' });
  const first = Object.values(index.shards)[0]?.pieces[0]?.file;
  const meta = first ? (await inspect(join(dir, first))).metadata['flockml.zero.paramGroups'] : undefined;
  const made: Tensor[] = [];
  try {
    const block = (key: string, s: FlatSpace): Tensor => {
      const v = loaded[key];
      const t = v instanceof Tensor ? v : v?.tensor;
      const n = v instanceof Tensor ? v.numel() : v ? v.shape.reduce((x, y) => x * y, 1) : -1;
      if (!t) throw stateError(op, `${dir} has no '${key}'`);
      if (n !== s.numel) throw stateError(op, `'${key}' holds ${n} elements, flat space of ${s.numel}`);
      const [a, b] = ownedRange(s, z.rank);
      const b2 = keep(
        noGrad(() =>
          tidy(() => {
            const out = zeros([s.per], { dtype: t.dtype, device: s.device });
            if (b > a) copy_(out.narrow(0, 0, b - a), t.reshape([-1]).narrow(0, v instanceof Tensor ? a : 0, b - a));
            return out;
          }),
        ),
      );
      made.push(b2);
      return b2;
    };
    const bySpace: OptimizerStateDict['state'] = {};
    const params: Tensor[] = [];
    z.spaces.forEach((s, si) => {
      params.push(block(`space${si}.param`, s));
      const st: State = {};
      if (z.optimizer)
        for (const key of Object.keys(loaded)) {
          if (!key.startsWith(`space${si}.`) || key === `space${si}.param`) continue;
          const name = key.slice(`space${si}.`.length);
          const v = loaded[key];
          st[name] = v instanceof Tensor && !index.shards[key].split ? Number(v.dataSync()[0]) : block(key, s);
        }
      if (Object.keys(st).length) bySpace[si] = st;
    });
    const opt = z.optimizer;
    if (opt) {
      const own = opt.stateDict();
      const hyper = meta ? (JSON.parse(meta) as Record<string, unknown>[]) : own.paramGroups.map(withoutParams);
      if (hyper.length !== own.paramGroups.length)
        throw stateError(op, `${dir} has ${hyper.length} parameter groups, the optimizer ${own.paramGroups.length}`);
      opt.loadStateDict({
        state: remapToLocal({ ...z, optimizer: opt }, bySpace),
        paramGroups: own.paramGroups.map((g, gi) => ({ ...g, ...hyper[gi] })),
      });
    }
    noGrad(() => tidy(() => z.shards.forEach((sh, i) => copy_(sh, params[i]))));
  } finally {
    for (const t of made) t.dispose();
    for (const v of Object.values(loaded)) (v instanceof Tensor ? v : v.tensor).dispose();
  }
  await z.afterLoad();
}
