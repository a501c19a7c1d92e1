/** Activation layers and shape helpers without parameters; their arguments are checked at construction. */
import type { Tensor } from '../tensor';
import { gelu, leakyRelu, logSoftmax, relu, sigmoid, silu, softmax, tanh } from './functional/activation';
import { Module, pyRepr } from './module';
import { checkChoice, checkNumber } from '../validate';
import { tensorArg } from './functional/args';

const dimArg = (op: string, name: string, v: unknown): number => checkNumber(op, name, v, { integer: true });

export class ReLU extends Module {
  forward(x: Tensor): Tensor {
    return relu(x);
  }
}

export class LeakyReLU extends Module {
  constructor(readonly negativeSlope = 0.01) {
    super();
    checkNumber('LeakyReLU', 'negativeSlope', negativeSlope);
  }
  forward(x: Tensor): Tensor {
    return leakyRelu(x, this.negativeSlope);
  }
  override extraRepr(): string {
    return `negative_slope=${pyRepr(this.negativeSlope, true)}`;
  }
}

export class GELU extends Module {
  constructor(readonly approximate: 'none' | 'tanh' = 'none') {
    super();
    checkChoice('GELU', 'approximate', approximate, ['none', 'tanh']);
  }
  forward(x: Tensor): Tensor {
    return gelu(x, this.approximate);
  }
  override extraRepr(): string {
    return `approximate=${pyRepr(this.approximate)}`;
  }
}

export class SiLU extends Module {
  forward(x: Tensor): Tensor {
    return silu(x);
  }
}

export class Tanh extends Module {
  forward(x: Tensor): Tensor {
    return tanh(x);
  }
}

export class Sigmoid extends Module {
  forward(x: Tensor): Tensor {
    return sigmoid(x);
  }
}

export class Softmax extends Module {
  constructor(readonly dim = -1) {
    super();
    dimArg('Softmax', 'dim', dim);
  }
  forward(x: Tensor): Tensor {
    return softmax(x, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}

export class LogSoftmax extends Module {
  constructor(readonly dim = -1) {
    super();
    dimArg('LogSoftmax', 'dim', dim);
  }
  forward(x: Tensor): Tensor {
    return logSoftmax(x, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}

/** Flattens dims startDim..endDim (default: all but the batch dim). */
export class Flatten extends Module {
  constructor(
    readonly startDim = 1,
    readonly endDim = -1,
  ) {
    super();
    dimArg('Flatten', 'startDim', startDim);
    dimArg('Flatten', 'endDim', endDim);
  }
  forward(x: Tensor): Tensor {
    return tensorArg('Flatten', 'input', x).flatten(this.startDim, this.endDim);
  }
  override extraRepr(): string {
    return `start_dim=${this.startDim}, end_dim=${this.endDim}`;
  }
}

export class Identity extends Module {
  forward(x: Tensor): Tensor {
    return x;
  }
}
