/** Dropout: active in training mode only (see Module.train/eval). */
import type { Tensor } from '../tensor';
import { Module } from './module';
import { dropout } from './functional/basic';
import { errorOf } from '../errors';

export class Dropout extends Module {
  constructor(readonly p = 0.5) {
    super();
    if (!(p >= 0 && p <= 1)) throw errorOf('ERR_RANGE', `Dropout: p must be in [0, 1], got ${p}`);
  }
  forward(x: Tensor): Tensor { return dropout(x, this.p, this.training); }
  override extraRepr(): string { return `p=${this.p}`; }
}
