/**
 * Flat shard layout shared by ZeRO's stages: a list of parameters of one dtype laid end to end
 * (a "space"), padded to a multiple of the world size, so that every rank owns one equal,
 * contiguous block of elements — balanced by elements, whatever the parameters' sizes. Equal
 * blocks are what reduce-scatter and all-gather exchange; the padding is zeros that no parameter
 * reads. Rank r's block [r·per, (r+1)·per) is also what `shardRange(numel, r, N)` in
 * lib/io/sharded.ts gives for the unpadded part, so a space saves as one split tensor whose pieces
 * load into any other world size.
 */
import type { Tensor } from '../../tensor';
import { keep, tidy } from '../../memory';
import { noGrad } from '../../dispatch/grad_mode';
import { cat } from '../../ops/shape';
import { zeros } from '../../ops/creation';
import { copy_ } from '../../ops/elementwise';
import { argError } from '../../errors';

export interface FlatSpace {
  params: Tensor[];
  /** Element offset of each parameter in the flat space. */
  offsets: number[];
  /** Each parameter's shape when the space was made (ZeRO-3 frees the parameters themselves between uses). */
  shapes: number[][];
  /** Elements of the parameters (without padding). */
  numel: number;
  /** Elements each rank owns: ceil(numel / worldSize). */
  per: number;
  worldSize: number;
  dtype: string;
  device: string;
}

export function makeSpace(op: string, params: Tensor[], worldSize: number): FlatSpace {
  if (params.length === 0) throw argError(op, 'a flat shard space needs at least one parameter');
  const dtype = params[0].dtype,
    device = params[0].device;
  const offsets: number[] = [];
  let numel = 0;
  for (const p of params) {
    if (p.dtype !== dtype || p.device !== device)
      throw argError(
        op,
        `parameters of one flat space must share dtype and device, got ${dtype} on ${device} and ${p.dtype} on ${p.device}`,
      );
    offsets.push(numel);
    numel += p.numel();
  }
  return {
    params,
    offsets,
    shapes: params.map((p) => [...p.shape]),
    numel,
    per: Math.max(1, Math.ceil(numel / worldSize)),
    worldSize,
    dtype,
    device,
  };
}

/** Groups `params` into spaces of one dtype and device each, in first-seen order. */
export function spacesByDtype(op: string, params: Tensor[], worldSize: number): FlatSpace[] {
  const by = new Map<string, Tensor[]>();
  for (const p of params) {
    const k = `${p.dtype}/${p.device}`;
    if (!by.has(k)) by.set(k, []);
    by.get(k)!.push(p);
  }
  return [...by.values()].map((ps) => makeSpace(op, ps, worldSize));
}

/** Elements [start, end) of the unpadded space that `rank` owns (end ≤ numel; may be empty). */
export function ownedRange(s: FlatSpace, rank: number): [number, number] {
  return [Math.min(s.numel, rank * s.per), Math.min(s.numel, (rank + 1) * s.per)];
}

/** The padded flat [per·worldSize] of `pick(p)` for every parameter (zeros where it gives null). Not kept. */
export function flatten(s: FlatSpace, pick: (p: Tensor) => Tensor | null): Tensor {
  return noGrad(() => {
    const parts = s.params.map((p) => {
      const t = pick(p);
      return t ? t.reshape([-1]) : zeros([p.numel()], { dtype: s.dtype as 'f32', device: s.device });
    });
    const pad = s.per * s.worldSize - s.numel;
    if (pad > 0) parts.push(zeros([pad], { dtype: s.dtype as 'f32', device: s.device }));
    return parts.length === 1 ? parts[0].clone() : cat(parts, 0);
  });
}

/** This rank's block [per] of the padded flat of the parameters' values, kept. */
export function shardValues(s: FlatSpace, rank: number): Tensor {
  return keep(
    tidy(() =>
      flatten(s, (p) => p.detach())
        .narrow(0, rank * s.per, s.per)
        .clone(),
    ),
  );
}

/** Writes a padded flat [per·worldSize] into the parameters (in place, outside autograd). */
export function unflattenInto(s: FlatSpace, flat: Tensor): void {
  noGrad(() =>
    tidy(() => {
      s.params.forEach((p, i) => copy_(p, flat.narrow(0, s.offsets[i], p.numel()).reshape([...p.shape])));
    }),
  );
}
