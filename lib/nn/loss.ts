/** Loss modules: thin holders of options around the functional losses. */
import type { Tensor } from '../tensor';
import { Module } from './module';
import * as L from './functional/loss';

export class CrossEntropyLoss extends Module {
  constructor(readonly options: L.CrossEntropyOptions = {}) { super(); }
  forward(input: Tensor, target: Tensor): Tensor { return L.crossEntropy(input, target, this.options); }
}

export class NLLLoss extends Module {
  constructor(readonly options: { reduction?: L.Reduction; ignoreIndex?: number } = {}) { super(); }
  forward(input: Tensor, target: Tensor): Tensor { return L.nllLoss(input, target, this.options); }
}

export class MSELoss extends Module {
  constructor(readonly options: { reduction?: L.Reduction } = {}) { super(); }
  forward(input: Tensor, target: Tensor): Tensor { return L.mseLoss(input, target, this.options); }
}

export class L1Loss extends Module {
  constructor(readonly options: { reduction?: L.Reduction } = {}) { super(); }
  forward(input: Tensor, target: Tensor): Tensor { return L.l1Loss(input, target, this.options); }
}

export class SmoothL1Loss extends Module {
  constructor(readonly options: { reduction?: L.Reduction; beta?: number } = {}) { super(); }
  forward(input: Tensor, target: Tensor): Tensor { return L.smoothL1Loss(input, target, this.options); }
}

export class BCEWithLogitsLoss extends Module {
  constructor(readonly options: { reduction?: L.Reduction; posWeight?: Tensor } = {}) { super(); }
  forward(input: Tensor, target: Tensor): Tensor { return L.binaryCrossEntropyWithLogits(input, target, this.options); }
}
