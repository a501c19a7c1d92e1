/** Normalisation layers: BatchNorm1d/2d (running statistics as buffers), LayerNorm, GroupNorm. */
import type { Tensor } from '../tensor';
import { full, zeros, ones } from '../ops/creation';
import type { DType } from '../dtype';
import { Module } from './module';
import { Parameter } from './parameter';
import { batchNorm, groupNorm, layerNorm } from './functional/norm';
import { errorOf } from '../errors';

export interface NormOptions {
  eps?: number;
  affine?: boolean;
  dtype?: DType;
  device?: string;
}

class BatchNorm extends Module {
  weight: Parameter | null;
  bias: Parameter | null;
  readonly eps: number;
  readonly momentum: number;
  readonly trackRunningStats: boolean;

  constructor(readonly numFeatures: number, private readonly dims: number[], options: NormOptions & { momentum?: number; trackRunningStats?: boolean } = {}) {
    super();
    this.eps = options.eps ?? 1e-5;
    this.momentum = options.momentum ?? 0.1;
    this.trackRunningStats = options.trackRunningStats ?? true;
    const o = { dtype: options.dtype ?? 'f32', device: options.device };
    const affine = options.affine ?? true;
    this.weight = affine ? new Parameter(ones([numFeatures], o)) : null;
    this.bias = affine ? new Parameter(zeros([numFeatures], o)) : null;
    // Buffer names are PyTorch's, so state dicts move between the two without renaming.
    if (this.trackRunningStats) {
      this.registerBuffer('running_mean', zeros([numFeatures], o));
      this.registerBuffer('running_var', ones([numFeatures], o));
      this.registerBuffer('num_batches_tracked', full([], 0, { dtype: 'i64', device: options.device }));
    }
  }

  get runningMean(): Tensor | null { return this.getBuffer('running_mean'); }
  get runningVar(): Tensor | null { return this.getBuffer('running_var'); }

  forward(x: Tensor): Tensor {
    if (!this.dims.includes(x.ndim))
      throw Object.assign(new RangeError(`${this.constructor.name}: expected a ${this.dims.join('-D or ')}-D input, got [${x.shape.join(',')}]`), { code: 'ERR_SHAPE' });
    if (this.training && this.trackRunningStats) {
      const n = this.getBuffer('num_batches_tracked');
      if (n) this.setBuffer('num_batches_tracked', n.add(1));
      n?.dispose();
    }
    // Without running statistics (trackRunningStats: false) eval mode uses the batch's own.
    return batchNorm(x, this.runningMean, this.runningVar, {
      weight: this.weight, bias: this.bias, training: this.training, momentum: this.momentum, eps: this.eps,
    });
  }

  override extraRepr(): string {
    return `${this.numFeatures}, eps=${this.eps}, momentum=${this.momentum}`;
  }
}

/** Batch normalisation of [N, C] or [N, C, L] inputs. */
export class BatchNorm1d extends BatchNorm {
  constructor(numFeatures: number, options: NormOptions & { momentum?: number; trackRunningStats?: boolean } = {}) {
    super(numFeatures, [2, 3], options);
  }
}

/** Batch normalisation of [N, C, H, W] inputs. */
export class BatchNorm2d extends BatchNorm {
  constructor(numFeatures: number, options: NormOptions & { momentum?: number; trackRunningStats?: boolean } = {}) {
    super(numFeatures, [4], options);
  }
}

export class LayerNorm extends Module {
  weight: Parameter | null;
  bias: Parameter | null;
  readonly normalizedShape: number[];
  readonly eps: number;

  constructor(normalizedShape: number | number[], options: NormOptions & { bias?: boolean } = {}) {
    super();
    this.normalizedShape = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
    this.eps = options.eps ?? 1e-5;
    const o = { dtype: options.dtype ?? 'f32', device: options.device };
    const affine = options.affine ?? true;
    this.weight = affine ? new Parameter(ones(this.normalizedShape, o)) : null;
    this.bias = affine && options.bias !== false ? new Parameter(zeros(this.normalizedShape, o)) : null;
  }

  forward(x: Tensor): Tensor {
    return layerNorm(x, this.normalizedShape, this.weight, this.bias, this.eps);
  }
}

export class GroupNorm extends Module {
  weight: Parameter | null;
  bias: Parameter | null;
  readonly eps: number;

  constructor(readonly numGroups: number, readonly numChannels: number, options: NormOptions = {}) {
    super();
    if (!Number.isInteger(numGroups) || numGroups < 1 || numChannels % numGroups !== 0)
      throw errorOf('ERR_RANGE', `GroupNorm: numChannels ${numChannels} must be divisible by numGroups ${numGroups}`);
    this.eps = options.eps ?? 1e-5;
    const o = { dtype: options.dtype ?? 'f32', device: options.device };
    const affine = options.affine ?? true;
    this.weight = affine ? new Parameter(ones([numChannels], o)) : null;
    this.bias = affine ? new Parameter(zeros([numChannels], o)) : null;
  }

  forward(x: Tensor): Tensor {
    return groupNorm(x, this.numGroups, this.weight, this.bias, this.eps);
  }
}
