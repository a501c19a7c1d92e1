/**
 * How a model's parameters are split across server ranks: whole tensors, assigned greedily (largest
 * first, each to the server holding the fewest bytes so far, ties to the lower rank) so the shards
 * are balanced by bytes. Every rank computes the same assignment from the parameters' shapes and
 * dtypes; a server checks a worker's description of its shard at hello.
 */
import { createHash } from 'node:crypto';
import type { Tensor } from '../../tensor';
import { flockError } from '../../errors';

/** The dtypes a parameter server moves: those whose values JS reads as a typed array of floats. */
const PS_DTYPES = ['f32', 'f64'] as const;
export type PsDType = (typeof PS_DTYPES)[number];

/** One parameter as the wire knows it. */
export interface ParamSpec {
  /** Position in model.parameters(). */
  index: number;
  shape: number[];
  dtype: PsDType;
  bytes: number;
}

export function paramSpecs(op: string, params: readonly Tensor[]): ParamSpec[] {
  return params.map((p, index) => {
    if (p.dtype !== 'f32' && p.dtype !== 'f64')
      throw flockError(
        'ERR_DTYPE',
        op,
        `parameter ${index} (shape [${p.shape.join(', ')}]) is ${p.dtype}; a parameter server moves f32 and f64 parameters`,
      );
    const numel = p.shape.reduce((a, b) => a * b, 1);
    return { index, shape: [...p.shape], dtype: p.dtype, bytes: numel * (p.dtype === 'f64' ? 8 : 4) };
  });
}

/** For each server rank, the specs of the parameters it holds, in model order. */
export function assignShards(op: string, specs: readonly ParamSpec[], servers: number): ParamSpec[][] {
  if (servers > specs.length)
    throw flockError(
      'ERR_ARG',
      op,
      `${servers} servers but the model has ${specs.length} parameter tensors; every server needs at least one (tensors are not split)`,
    );
  const load = new Array<number>(servers).fill(0);
  const shards: ParamSpec[][] = Array.from({ length: servers }, () => []);
  const order = [...specs].sort((a, b) => b.bytes - a.bytes || a.index - b.index);
  for (const s of order) {
    let best = 0;
    for (let r = 1; r < servers; r++) if (load[r] < load[best]) best = r;
    load[best] += s.bytes;
    shards[best].push(s);
  }
  for (const sh of shards) sh.sort((a, b) => a.index - b.index);
  return shards;
}

export const shardBytes = (shard: readonly ParamSpec[]): number => shard.reduce((n, s) => n + s.bytes, 0);

/** A shard's identity at hello: a digest of every tensor's index, dtype and shape, with a readable summary. */
export function describeShard(shard: readonly ParamSpec[]): { digest: string; summary: string } {
  const full = shard.map((s) => `${s.index}:${s.dtype}[${s.shape.join('x')}]`).join(',');
  return {
    digest: createHash('sha256').update(full).digest('hex'),
    summary: `${shard.length} tensors (parameters ${shard
      .slice(0, 6)
      .map((s) => s.index)
      .join(', ')}${shard.length > 6 ? ', …' : ''}) of ${shardBytes(shard)} bytes`,
  };
}
