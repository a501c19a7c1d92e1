/** Activation layers and shape helpers without parameters. */
import type { Tensor } from '../tensor';
import { gelu, leakyRelu, relu, sigmoid, silu, tanh } from '../ops/elementwise';
import { logSoftmax, softmax } from '../ops/reduce';
import { Module } from './module';

export class ReLU extends Module {
  forward(x: Tensor): Tensor { return relu(x); }
}

export class LeakyReLU extends Module {
  constructor(readonly negativeSlope = 0.01) { super(); }
  forward(x: Tensor): Tensor { return leakyRelu(x, this.negativeSlope); }
  override extraRepr(): string { return `negativeSlope=${this.negativeSlope}`; }
}

export class GELU extends Module {
  constructor(readonly approximate: 'none' | 'tanh' = 'none') { super(); }
  forward(x: Tensor): Tensor { return gelu(x, this.approximate); }
}

export class SiLU extends Module {
  forward(x: Tensor): Tensor { return silu(x); }
}

export class Tanh extends Module {
  forward(x: Tensor): Tensor { return tanh(x); }
}

export class Sigmoid extends Module {
  forward(x: Tensor): Tensor { return sigmoid(x); }
}

export class Softmax extends Module {
  constructor(readonly dim = -1) { super(); }
  forward(x: Tensor): Tensor { return softmax(x, this.dim); }
}

export class LogSoftmax extends Module {
  constructor(readonly dim = -1) { super(); }
  forward(x: Tensor): Tensor { return logSoftmax(x, this.dim); }
}

/** Flattens dims startDim..endDim (default: all but the batch dim). */
export class Flatten extends Module {
  constructor(readonly startDim = 1, readonly endDim = -1) { super(); }
  forward(x: Tensor): Tensor { return x.flatten(this.startDim, this.endDim); }
}

export class Identity extends Module {
  forward(x: Tensor): Tensor { return x; }
}
