/**
 * What a ZeroRedundancyOptimizer needs from a DistributedDataParallel created with `zeroStage`:
 * the flat spaces it shards (DDP's gradient buckets) and, after syncGradients(), this rank's
 * averaged gradient block of each. Kept apart from ddp.ts so the optimizer does not import DDP.
 */
import type { Tensor } from '../../tensor';
import type { ProcessGroup } from '../../distributed/process_group';
import type { FlatSpace } from './layout';

export type ZeroStage = 1 | 2 | 3;

export interface ZeroGradientSource {
  /** 0 (a DDP created without ZeRO) is refused by the optimizer. */
  readonly zeroStage: 0 | ZeroStage;
  /** The spaces whose blocks the optimizer steps, in a fixed order (the same on every rank). */
  readonly zeroSpaces: readonly FlatSpace[];
  readonly zeroGroup: ProcessGroup | undefined;
  /**
   * Stage 2: this rank's averaged gradient block [per] of space `i` since the last
   * syncGradients() (ownership passes to the caller), or null when none arrived. Stage 1 keeps the
   * full averaged gradients in `.grad` instead. Stage 3: the block's gradient, null when its
   * parameter got none (it throws while a backward is not synchronized).
   */
  takeGradShard(i: number): Tensor | null;
  /** Stage 3: this rank's parameter blocks, one per space (the source owns them; the optimizer steps them in place). */
  readonly zeroShards?: readonly Tensor[];
  /** Stage 3: the blocks were changed outside a step (a load): what was gathered before is stale. */
  zeroReshard?(): void;
}

export function isZeroGradientSource(v: unknown): v is ZeroGradientSource {
  return !!v && typeof v === 'object' && 'zeroSpaces' in v && 'takeGradShard' in v && 'zeroStage' in v;
}

/** Something that looks like a gradient source but was created without ZeRO (DDP's zeroStage 0). */
export function isUnshardedSource(v: unknown): boolean {
  return isZeroGradientSource(v) && !(v.zeroStage > 0);
}
