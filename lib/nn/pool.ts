/** Pooling layers: MaxPool2d, AvgPool2d, AdaptiveAvgPool2d. */
import type { Tensor } from '../tensor';
import { Module } from './module';
import { adaptiveAvgPool2d, avgPool2d, maxPool2d, type Pool2dOptions } from './functional/pool';
import type { Pair } from './functional/args';

export class MaxPool2d extends Module {
  constructor(readonly kernelSize: Pair, readonly options: Pool2dOptions = {}) { super(); }
  forward(x: Tensor): Tensor { return maxPool2d(x, this.kernelSize, this.options); }
  override extraRepr(): string { return `kernelSize=${JSON.stringify(this.kernelSize)}`; }
}

export class AvgPool2d extends Module {
  constructor(readonly kernelSize: Pair, readonly options: Pool2dOptions & { countIncludePad?: boolean } = {}) { super(); }
  forward(x: Tensor): Tensor { return avgPool2d(x, this.kernelSize, this.options); }
  override extraRepr(): string { return `kernelSize=${JSON.stringify(this.kernelSize)}`; }
}

export class AdaptiveAvgPool2d extends Module {
  constructor(readonly outputSize: Pair) { super(); }
  forward(x: Tensor): Tensor { return adaptiveAvgPool2d(x, this.outputSize); }
  override extraRepr(): string { return `outputSize=${JSON.stringify(this.outputSize)}`; }
}
