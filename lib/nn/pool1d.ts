/** 1-d pooling layers: MaxPool1d, AvgPool1d, AdaptiveAvgPool1d; their options are checked at construction. */
import type { Tensor } from '../tensor';
import { Module, pyRepr } from './module';
import { AVG_POOL_KEYS, MAX_POOL_KEYS } from './functional/pool';
import {
  adaptiveAvgPool1dWith,
  avgPool1dWith,
  maxPool1dWith,
  pool1dGeometry,
  type AvgPool1dOptions,
  type Pool1dGeometry,
  type Pool1dOptions,
} from './functional/pool1d';
import { type Single, single } from './functional/conv1d';

/** Max pooling over [N, C, L], as torch.nn.MaxPool1d (maxPool1dWithIndices gives the indices). */
export class MaxPool1d extends Module {
  readonly #g: Pool1dGeometry;
  constructor(
    readonly kernelSize: Single,
    readonly options: Pool1dOptions = {},
  ) {
    super();
    this.#g = pool1dGeometry('MaxPool1d', kernelSize, options, MAX_POOL_KEYS);
  }
  forward(x: Tensor): Tensor {
    return maxPool1dWith('MaxPool1d', x, this.#g)[0];
  }
  override extraRepr(): string {
    const [k, s, p, d, ceil] = this.#g;
    return `kernel_size=${k[1]}, stride=${s[1]}, padding=${p[1]}, dilation=${d[1]}, ceil_mode=${pyRepr(ceil)}`;
  }
}

/** Average pooling over [N, C, L], as torch.nn.AvgPool1d. */
export class AvgPool1d extends Module {
  readonly #g: Pool1dGeometry;
  constructor(
    readonly kernelSize: Single,
    readonly options: AvgPool1dOptions = {},
  ) {
    super();
    this.#g = pool1dGeometry('AvgPool1d', kernelSize, options, AVG_POOL_KEYS);
  }
  forward(x: Tensor): Tensor {
    return avgPool1dWith('AvgPool1d', x, this.#g);
  }
  override extraRepr(): string {
    const [k, s, p] = this.#g;
    return `kernel_size=${pyRepr([k[1]])}, stride=${pyRepr([s[1]])}, padding=${pyRepr([p[1]])}`;
  }
}

/** Average pooling of [N, C, L] to a fixed length, as torch.nn.AdaptiveAvgPool1d. */
export class AdaptiveAvgPool1d extends Module {
  readonly #size: number;
  constructor(readonly outputSize: Single) {
    super();
    this.#size = single('AdaptiveAvgPool1d', 'outputSize', outputSize, 1);
  }
  forward(x: Tensor): Tensor {
    return adaptiveAvgPool1dWith('AdaptiveAvgPool1d', x, this.#size);
  }
  override extraRepr(): string {
    return `output_size=${this.#size}`;
  }
}
