/** Pooling layers: MaxPool2d, AvgPool2d, AdaptiveAvgPool2d; their options are checked at construction. */
import type { Tensor } from '../tensor';
import { Module, pyRepr } from './module';
import {
  AVG_POOL_KEYS,
  MAX_POOL_KEYS,
  adaptiveAvgPool2dWith,
  avgPool2dWith,
  maxPool2dWith,
  poolGeometry,
  type AvgPool2dOptions,
  type Pool2dOptions,
} from './functional/pool';
import { pair, type Pair } from './functional/args';

export class MaxPool2d extends Module {
  readonly #geometry: ReturnType<typeof poolGeometry>;
  constructor(
    readonly kernelSize: Pair,
    readonly options: Pool2dOptions = {},
  ) {
    super();
    this.#geometry = poolGeometry('MaxPool2d', kernelSize, options, MAX_POOL_KEYS);
  }
  forward(x: Tensor): Tensor {
    return maxPool2dWith('MaxPool2d', x, this.#geometry)[0];
  }
  override extraRepr(): string {
    const o = this.options;
    return `kernel_size=${pyRepr(this.kernelSize)}, stride=${pyRepr(o.stride ?? this.kernelSize)}, padding=${pyRepr(o.padding ?? 0)}, dilation=${pyRepr(o.dilation ?? 1)}, ceil_mode=${pyRepr(o.ceilMode ?? false)}`;
  }
}

export class AvgPool2d extends Module {
  readonly #geometry: ReturnType<typeof poolGeometry>;
  constructor(
    readonly kernelSize: Pair,
    readonly options: AvgPool2dOptions = {},
  ) {
    super();
    this.#geometry = poolGeometry('AvgPool2d', kernelSize, options, AVG_POOL_KEYS);
  }
  forward(x: Tensor): Tensor {
    return avgPool2dWith('AvgPool2d', x, this.#geometry);
  }
  override extraRepr(): string {
    return `kernel_size=${pyRepr(this.kernelSize)}, stride=${pyRepr(this.options.stride ?? this.kernelSize)}, padding=${pyRepr(this.options.padding ?? 0)}`;
  }
}

export class AdaptiveAvgPool2d extends Module {
  readonly #size: [number, number];
  constructor(readonly outputSize: Pair) {
    super();
    this.#size = pair('AdaptiveAvgPool2d', 'outputSize', outputSize, 1);
  }
  forward(x: Tensor): Tensor {
    return adaptiveAvgPool2dWith('AdaptiveAvgPool2d', x, this.#size);
  }
  override extraRepr(): string {
    return `output_size=${pyRepr(this.outputSize)}`;
  }
}
