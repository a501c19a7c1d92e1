/** Dropout: active in training mode only (see Module.train/eval). */
import type { Tensor } from '../tensor';
import { Module, pyRepr } from './module';
import { dropout } from './functional/basic';
import { checkNumber } from '../validate';

export class Dropout extends Module {
  constructor(readonly p = 0.5) {
    super();
    checkNumber('Dropout', 'p', p, { min: 0, max: 1 });
  }
  forward(x: Tensor): Tensor {
    return dropout(x, this.p, this.training);
  }
  override extraRepr(): string {
    return `p=${pyRepr(this.p, true)}, inplace=False`;
  }
}
