/** Loss modules: thin holders of options around the functional losses, checked at construction. */
import type { Tensor } from '../tensor';
import { Module } from './module';
import * as L from './functional/loss';
import * as P from './functional/loss_probability';

export class CrossEntropyLoss extends Module {
  readonly #o: ReturnType<typeof L.crossEntropyOptions>;
  constructor(readonly options: L.CrossEntropyOptions = {}) {
    super();
    this.#o = L.crossEntropyOptions('CrossEntropyLoss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.crossEntropyWith('CrossEntropyLoss', input, target, this.#o);
  }
}

export class NLLLoss extends Module {
  readonly #o: ReturnType<typeof L.nllLossOptions>;
  constructor(readonly options: L.NLLLossOptions = {}) {
    super();
    this.#o = L.nllLossOptions('NLLLoss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.nllLossWith('NLLLoss', input, target, this.#o);
  }
}

export class MSELoss extends Module {
  constructor(readonly options: L.ReductionOptions = {}) {
    super();
    L.reductionOptions('MSELoss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.mseLoss(input, target, this.options);
  }
}

export class L1Loss extends Module {
  constructor(readonly options: L.ReductionOptions = {}) {
    super();
    L.reductionOptions('L1Loss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.l1Loss(input, target, this.options);
  }
}

export class SmoothL1Loss extends Module {
  constructor(readonly options: L.SmoothL1LossOptions = {}) {
    super();
    L.smoothL1Options('SmoothL1Loss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.smoothL1Loss(input, target, this.options);
  }
}

export class BCEWithLogitsLoss extends Module {
  constructor(readonly options: L.BCEWithLogitsOptions = {}) {
    super();
    L.bceOptions('BCEWithLogitsLoss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.binaryCrossEntropyWithLogits(input, target, this.options);
  }
}

export class HuberLoss extends Module {
  constructor(readonly options: L.HuberLossOptions = {}) {
    super();
    L.huberOptions('HuberLoss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.huberLoss(input, target, this.options);
  }
}

export class BCELoss extends Module {
  readonly #o: ReturnType<typeof P.bceLossOptions>;
  constructor(readonly options: P.BCELossOptions = {}) {
    super();
    this.#o = P.bceLossOptions('BCELoss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return P.binaryCrossEntropyWith('BCELoss', input, target, this.#o);
  }
}

export class KLDivLoss extends Module {
  readonly #o: ReturnType<typeof P.klDivOptions>;
  constructor(readonly options: P.KLDivLossOptions = {}) {
    super();
    this.#o = P.klDivOptions('KLDivLoss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return P.klDivWith('KLDivLoss', input, target, this.#o);
  }
}
