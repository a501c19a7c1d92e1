import * as srt from '../sort';
import * as smp from '../sample';
import type * as red from '../reduce';
import { install } from './install';

declare module '../../tensor' {
  interface Tensor {
    /** Stable sort along `dim` (default last): `{ values, indices }`. */
    sort(dim?: number, descending?: boolean, stable?: boolean): red.ValuesIndices;
    argsort(dim?: number, descending?: boolean, stable?: boolean): Tensor;
    topk(k: number, dim?: number, largest?: boolean, sorted?: boolean): red.ValuesIndices;
    multinomial(numSamples: number, replacement?: boolean): Tensor;
  }
}

install({
  sort(dim = -1, descending = false, stable = false) {
    return srt.sort(this, dim, descending, stable);
  },
  argsort(dim = -1, descending = false, stable = false) {
    return srt.argsort(this, dim, descending, stable);
  },
  topk(k, dim = -1, largest = true, sorted = true) {
    return srt.topk(this, k, dim, largest, sorted);
  },
  multinomial(numSamples, replacement = false) {
    return smp.multinomial(this, numSamples, replacement);
  },
});
