/**
 * Megatron-LM's parallel linear layers. ColumnParallelLinear splits the output features (weight
 * rows, bias) across the group; RowParallelLinear splits the input features (weight columns) and
 * sums the partial products. Each rank holds its slice of the weight that nn.Linear would have
 * drawn from the same random state, so a model split across ranks starts where the unsplit one does.
 *
 *   const up = new ColumnParallelLinear(512, 2048, { group: tp, gatherOutput: false });
 *   const down = new RowParallelLinear(2048, 512, { group: tp, inputIsParallel: true });
 *   const mlp = new nn.Sequential(up, new nn.ReLU(), down);
 *   const y = mlp.forward(x);   // synchronous: the collectives are ordered on the device
 */
import type { Tensor } from '../../tensor';
import type { DType } from '../../dtype';
import type { ProcessGroup } from '../../distributed/process_group';
import { Module } from '../../nn/module';
import { Linear } from '../../nn/linear';
import type { Parameter } from '../../nn/parameter';
import { linear } from '../../nn/functional/basic';
import { checkOptions } from '../../errors';
import { checkBool, checkInt } from '../../validate';
import { checkGroup, copyToParallel, gatherFromParallel, reduceFromParallel, scatterToParallel } from './mappings';
import { copyParameter, shardParameter, split } from './shard';

interface ParallelLinearOptions {
  /** The tensor-parallel group the layer is split over (required). */
  group: ProcessGroup;
  bias?: boolean;
  dtype?: DType;
  device?: string;
}

export interface ColumnParallelLinearOptions extends ParallelLinearOptions {
  /** All-gather the output features so every rank gets the full output (default true, as Megatron-LM). */
  gatherOutput?: boolean;
}

export interface RowParallelLinearOptions extends ParallelLinearOptions {
  /** The input already holds this rank's slice of the features (the output of a ColumnParallelLinear without gatherOutput); default false. */
  inputIsParallel?: boolean;
}

/** y = x·Aᵀ + b with A split by rows (output features) across the group. */
export class ColumnParallelLinear extends Module {
  weight: Parameter;
  bias: Parameter | null;
  readonly gatherOutput: boolean;
  readonly outFeaturesPerRank: number;
  readonly group: ProcessGroup;

  constructor(
    readonly inFeatures: number,
    readonly outFeatures: number,
    options: ColumnParallelLinearOptions,
  ) {
    super();
    const op = 'ColumnParallelLinear';
    const o = checkOptions(op, options, ['group', 'bias', 'gatherOutput', 'dtype', 'device']);
    this.group = checkGroup(op, o.group);
    checkInt(op, 'inFeatures', inFeatures, 1);
    checkInt(op, 'outFeatures', outFeatures, 1);
    this.gatherOutput = checkBool(op, 'gatherOutput', o.gatherOutput ?? true);
    this.outFeaturesPerRank = split(op, 'outFeatures', outFeatures, this.group.size);
    const full = new Linear(inFeatures, outFeatures, { bias: o.bias ?? true, dtype: o.dtype, device: o.device });
    this.weight = shardParameter(full.weight, 0, this.group.rank, this.group.size);
    this.bias = full.bias ? shardParameter(full.bias, 0, this.group.rank, this.group.size) : null;
    full.weight.dispose();
    full.bias?.dispose();
  }

  /** [..., inFeatures] → [..., outFeatures] (gatherOutput) or this rank's [..., outFeatures / size]. */
  forward(x: Tensor): Tensor {
    const y = linear(copyToParallel(x, this.group), this.weight, this.bias);
    return this.gatherOutput ? gatherFromParallel(y, this.group) : y;
  }

  override extraRepr(): string {
    return `inFeatures=${this.inFeatures}, outFeatures=${this.outFeatures}, bias=${this.bias !== null}, gatherOutput=${this.gatherOutput}, tp=${this.group.size}`;
  }
}

/** y = x·Aᵀ + b with A split by columns (input features) across the group; b is replicated. */
export class RowParallelLinear extends Module {
  weight: Parameter;
  bias: Parameter | null;
  readonly inputIsParallel: boolean;
  readonly inFeaturesPerRank: number;
  readonly group: ProcessGroup;

  constructor(
    readonly inFeatures: number,
    readonly outFeatures: number,
    options: RowParallelLinearOptions,
  ) {
    super();
    const op = 'RowParallelLinear';
    const o = checkOptions(op, options, ['group', 'bias', 'inputIsParallel', 'dtype', 'device']);
    this.group = checkGroup(op, o.group);
    checkInt(op, 'inFeatures', inFeatures, 1);
    checkInt(op, 'outFeatures', outFeatures, 1);
    this.inputIsParallel = checkBool(op, 'inputIsParallel', o.inputIsParallel ?? false);
    this.inFeaturesPerRank = split(op, 'inFeatures', inFeatures, this.group.size);
    const full = new Linear(inFeatures, outFeatures, { bias: o.bias ?? true, dtype: o.dtype, device: o.device });
    this.weight = shardParameter(full.weight, 1, this.group.rank, this.group.size);
    this.bias = full.bias ? copyParameter(full.bias) : null;
    full.weight.dispose();
    full.bias?.dispose();
  }

  /** [..., inFeatures / size] (inputIsParallel) or [..., inFeatures] → [..., outFeatures] on every rank. */
  forward(x: Tensor): Tensor {
    const xp = this.inputIsParallel ? x : scatterToParallel(x, this.group);
    const y = reduceFromParallel(linear(xp, this.weight), this.group);
    return this.bias ? y.add(this.bias) : y;
  }

  override extraRepr(): string {
    return `inFeatures=${this.inFeatures}, outFeatures=${this.outFeatures}, bias=${this.bias !== null}, inputIsParallel=${this.inputIsParallel}, tp=${this.group.size}`;
  }
}
