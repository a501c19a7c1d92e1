/**
 * The conjugate operators as modules over one group, for nn.Sequential and other containers:
 *
 *   new nn.Sequential(new ScatterToParallel({ group }), localLayer, new GatherFromParallel({ group }))
 */
import type { Tensor } from '../../tensor';
import type { ProcessGroup } from '../../distributed/process_group';
import { Module } from '../../nn/module';
import { checkOptions } from '../../errors';
import { checkGroup, copyToParallel, gatherFromParallel, reduceFromParallel, scatterToParallel } from './mappings';

/** Options of the operator modules. */
export interface ParallelMappingOptions {
  /** The tensor-parallel group the operator runs over (required). */
  group: ProcessGroup;
}

abstract class Mapping extends Module {
  readonly group: ProcessGroup;

  constructor(name: string, options: ParallelMappingOptions) {
    super();
    this.group = checkGroup(name, checkOptions(name, options, ['group']).group);
  }

  override extraRepr(): string {
    return `tp=${this.group.size}`;
  }
}

/** {@link copyToParallel} as a module: identity forward, gradient summed over the group. */
export class CopyToParallel extends Mapping {
  constructor(options: ParallelMappingOptions) {
    super('CopyToParallel', options);
  }

  forward(x: Tensor): Tensor {
    return copyToParallel(x, this.group);
  }
}

/** {@link reduceFromParallel} as a module: sum over the group forward, identity gradient. */
export class ReduceFromParallel extends Mapping {
  constructor(options: ParallelMappingOptions) {
    super('ReduceFromParallel', options);
  }

  forward(x: Tensor): Tensor {
    return reduceFromParallel(x, this.group);
  }
}

/** {@link scatterToParallel} as a module: this rank's slice of the last dim, gradient all-gathered. */
export class ScatterToParallel extends Mapping {
  constructor(options: ParallelMappingOptions) {
    super('ScatterToParallel', options);
  }

  forward(x: Tensor): Tensor {
    return scatterToParallel(x, this.group);
  }
}

/** {@link gatherFromParallel} as a module: all-gather along the last dim, gradient sliced back. */
export class GatherFromParallel extends Mapping {
  constructor(options: ParallelMappingOptions) {
    super('GatherFromParallel', options);
  }

  forward(x: Tensor): Tensor {
    return gatherFromParallel(x, this.group);
  }
}
