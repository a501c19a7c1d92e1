/** Normalisation layers: BatchNorm1d/2d (running statistics as buffers), LayerNorm, GroupNorm. */
import type { Tensor } from '../tensor';
import { full, zeros, ones } from '../ops/creation';
import { reciprocal } from '../ops/elementwise';
import type { DType } from '../dtype';
import { Module, pyRepr } from './module';
import { type Parameter, ownParameter } from './parameter';
import { batchNormWith, groupNormWith, layerNormWith } from './functional/norm';
import { tensorArg, tensorOptions } from './functional/args';
import { argError, checkOptions, flockError } from '../errors';
import { checkBool, checkInt, checkNumber, checkSizes } from '../validate';
import { shapeStr } from '../ops/util';

export interface NormOptions {
  eps?: number;
  affine?: boolean;
  dtype?: DType;
  device?: string;
}

export interface BatchNormOptions extends NormOptions {
  /**
   * Weight of each batch in the running statistics (default 0.1); null keeps a cumulative moving
   * average instead (factor 1/numBatchesTracked), as PyTorch's momentum=None.
   */
  momentum?: number | null;
  trackRunningStats?: boolean;
}

export interface LayerNormOptions extends NormOptions {
  /** PyTorch's name for `affine` (either may be given). */
  elementwiseAffine?: boolean;
  /** With the affine part, whether it has a bias (default true). */
  bias?: boolean;
}

class BatchNorm extends Module {
  weight: Parameter | null;
  bias: Parameter | null;
  readonly eps: number;
  readonly momentum: number | null;
  readonly trackRunningStats: boolean;

  constructor(
    readonly numFeatures: number,
    private readonly dims: number[],
    options: BatchNormOptions,
    op: string,
  ) {
    super();
    const o = checkOptions(op, options, ['eps', 'momentum', 'affine', 'trackRunningStats', 'dtype', 'device']);
    checkInt(op, 'numFeatures', numFeatures, 1);
    this.eps = checkNumber(op, 'eps', o.eps ?? 1e-5, { min: 0 });
    this.momentum = o.momentum === null ? null : checkNumber(op, 'momentum', o.momentum ?? 0.1, { min: 0, max: 1 });
    this.trackRunningStats = checkBool(op, 'trackRunningStats', o.trackRunningStats ?? true);
    const affine = checkBool(op, 'affine', o.affine ?? true);
    const t = tensorOptions(op, o);
    this.weight = affine ? ownParameter(ones([numFeatures], t)) : null;
    this.bias = affine ? ownParameter(zeros([numFeatures], t)) : null;
    // Buffer names are PyTorch's, so state dicts move between the two without renaming.
    if (this.trackRunningStats) {
      this.registerBuffer('running_mean', zeros([numFeatures], t));
      this.registerBuffer('running_var', ones([numFeatures], t));
      this.registerBuffer('num_batches_tracked', full([], 0, { dtype: 'i64', device: t.device }));
    }
  }

  get runningMean(): Tensor | null {
    return this.getBuffer('running_mean');
  }
  get runningVar(): Tensor | null {
    return this.getBuffer('running_var');
  }

  forward(x: Tensor): Tensor {
    const op = this.constructor.name;
    tensorArg(op, 'input', x);
    if (!this.dims.includes(x.ndim))
      throw flockError('ERR_SHAPE', op, `expected a ${this.dims.join('-D or ')}-D input, got ${shapeStr(x.shape)}`);
    if (x.shape[1] !== this.numFeatures)
      throw flockError('ERR_SHAPE', op, `expected ${this.numFeatures} channels in dim 1, got input ${shapeStr(x.shape)}`);
    let factor: number | Tensor = this.momentum ?? 0;
    if (this.training && this.trackRunningStats) {
      const n = this.getBuffer('num_batches_tracked');
      if (n) {
        const next = n.add(1);
        this.setBuffer('num_batches_tracked', next);
        n.dispose();
        // momentum null: the cumulative average, factor 1/numBatchesTracked (after this batch),
        // computed on the device so the step needs no sync.
        if (this.momentum === null) factor = reciprocal(next.to('f64'));
      }
    }
    // Without running statistics (trackRunningStats: false) eval mode uses the batch's own.
    return batchNormWith(op, x, this.runningMean, this.runningVar, {
      weight: this.weight,
      bias: this.bias,
      training: this.training || !this.trackRunningStats,
      factor,
      eps: this.eps,
    });
  }

  override extraRepr(): string {
    return `${this.numFeatures}, eps=${pyRepr(this.eps, true)}, momentum=${pyRepr(this.momentum, true)}, affine=${pyRepr(this.weight !== null)}, track_running_stats=${pyRepr(this.trackRunningStats)}`;
  }
}

/** Batch normalisation of [N, C] or [N, C, L] inputs. */
export class BatchNorm1d extends BatchNorm {
  constructor(numFeatures: number, options: BatchNormOptions = {}) {
    super(numFeatures, [2, 3], options, 'BatchNorm1d');
  }
}

/** Batch normalisation of [N, C, H, W] inputs. */
export class BatchNorm2d extends BatchNorm {
  constructor(numFeatures: number, options: BatchNormOptions = {}) {
    super(numFeatures, [4], options, 'BatchNorm2d');
  }
}

export class LayerNorm extends Module {
  weight: Parameter | null;
  bias: Parameter | null;
  readonly normalizedShape: number[];
  readonly eps: number;

  constructor(normalizedShape: number | number[], options: LayerNormOptions = {}) {
    super();
    const o = checkOptions('LayerNorm', options, ['eps', 'affine', 'elementwiseAffine', 'bias', 'dtype', 'device']);
    this.normalizedShape = checkSizes('LayerNorm', 'normalizedShape', normalizedShape, 0);
    this.eps = checkNumber('LayerNorm', 'eps', o.eps ?? 1e-5, { min: 0 });
    const affine = checkBool('LayerNorm', 'affine', o.affine ?? o.elementwiseAffine ?? true);
    if (o.elementwiseAffine !== undefined && checkBool('LayerNorm', 'elementwiseAffine', o.elementwiseAffine) !== affine)
      throw argError('LayerNorm', `affine (${o.affine}) and elementwiseAffine (${o.elementwiseAffine}) disagree; give one of them`);
    const hasBias = checkBool('LayerNorm', 'bias', o.bias ?? true);
    const t = tensorOptions('LayerNorm', o);
    this.weight = affine ? ownParameter(ones(this.normalizedShape, t)) : null;
    this.bias = affine && hasBias ? ownParameter(zeros(this.normalizedShape, t)) : null;
  }

  forward(x: Tensor): Tensor {
    return layerNormWith('LayerNorm', x, this.normalizedShape, this.weight, this.bias, this.eps);
  }

  override extraRepr(): string {
    return `${pyRepr(this.normalizedShape)}, eps=${pyRepr(this.eps, true)}, elementwise_affine=${pyRepr(this.weight !== null)}`;
  }
}

export class GroupNorm extends Module {
  weight: Parameter | null;
  bias: Parameter | null;
  readonly eps: number;

  constructor(
    readonly numGroups: number,
    readonly numChannels: number,
    options: NormOptions = {},
  ) {
    super();
    const o = checkOptions('GroupNorm', options, ['eps', 'affine', 'dtype', 'device']);
    checkInt('GroupNorm', 'numGroups', numGroups, 1);
    checkInt('GroupNorm', 'numChannels', numChannels, 1);
    if (numChannels % numGroups !== 0)
      throw flockError('ERR_RANGE', 'GroupNorm', `numChannels ${numChannels} must be divisible by numGroups ${numGroups}`);
    this.eps = checkNumber('GroupNorm', 'eps', o.eps ?? 1e-5, { min: 0 });
    const affine = checkBool('GroupNorm', 'affine', o.affine ?? true);
    const t = tensorOptions('GroupNorm', o);
    this.weight = affine ? ownParameter(ones([numChannels], t)) : null;
    this.bias = affine ? ownParameter(zeros([numChannels], t)) : null;
  }

  forward(x: Tensor): Tensor {
    return groupNormWith('GroupNorm', x, this.numGroups, this.weight, this.bias, this.eps);
  }

  override extraRepr(): string {
    return `${this.numGroups}, ${this.numChannels}, eps=${pyRepr(this.eps, true)}, affine=${pyRepr(this.weight !== null)}`;
  }
}
