/**
 * The Tensor methods of the scan, sort, reduction-with-index, scatter, select and sample ops
 * (`t.cumsum(0)`, `t.sort()`, `t.topk(3)`, `t.scatter(...)`, ...), installed as lib/ops/methods.ts
 * installs the others; lib/index.ts imports this module next to that one.
 */
import type { Tensor } from '../tensor';
import { install } from './methods';
import * as red from './reduce';
import * as scan from './scan';
import * as srt from './sort';
import * as sc from './scatter';
import * as idx from './indexing';
import * as sel from './select';
import * as smp from './sample';

declare module '../tensor' {
  interface Tensor {
    cumsum(dim: number, options?: scan.ScanOptions): Tensor;
    cumprod(dim: number, options?: scan.ScanOptions): Tensor;
    /** Stable sort along `dim` (default last): `{ values, indices }`. */
    sort(dim?: number, descending?: boolean, stable?: boolean): red.ValuesIndices;
    argsort(dim?: number, descending?: boolean, stable?: boolean): Tensor;
    topk(k: number, dim?: number, largest?: boolean, sorted?: boolean): red.ValuesIndices;
    /** The product of every element, or along `dim`. */
    prod(dim?: number, keepdim?: boolean, options?: { dtype?: import('../dtype').DType }): Tensor;
    all(dim?: number | number[], keepdim?: boolean): Tensor;
    any(dim?: number | number[], keepdim?: boolean): Tensor;
    scatter(dim: number, index: Tensor, src: Tensor | number): Tensor;
    scatterReduce(dim: number, index: Tensor, src: Tensor, reduce: sc.ScatterReduce, options?: sc.ScatterReduceOptions): Tensor;
    indexAdd(dim: number, index: Tensor, source: Tensor, options?: { alpha?: number }): Tensor;
    maskedSelect(mask: Tensor): Tensor;
    nonzero(options?: { asTuple?: false }): Tensor;
    nonzero(options: { asTuple: true }): Tensor[];
    multinomial(numSamples: number, replacement?: boolean): Tensor;
  }
}

install({
  cumsum(dim, options) {
    return scan.cumsum(this, dim, options);
  },
  cumprod(dim, options) {
    return scan.cumprod(this, dim, options);
  },
  sort(dim = -1, descending = false, stable = false) {
    return srt.sort(this, dim, descending, stable);
  },
  argsort(dim = -1, descending = false, stable = false) {
    return srt.argsort(this, dim, descending, stable);
  },
  topk(k, dim = -1, largest = true, sorted = true) {
    return srt.topk(this, k, dim, largest, sorted);
  },
  prod(dim, keepdim = false, options) {
    return red.prod(this, dim, keepdim, options);
  },
  all(dim, keepdim = false) {
    return red.all(this, dim, keepdim);
  },
  any(dim, keepdim = false) {
    return red.any(this, dim, keepdim);
  },
  scatter(dim, index, src) {
    return sc.scatter(this, dim, index, src);
  },
  scatterReduce(dim, index, src, reduce, options) {
    return sc.scatterReduce(this, dim, index, src, reduce, options);
  },
  indexAdd(dim, index, source, options) {
    return idx.indexAdd(this, dim, index, source, options);
  },
  maskedSelect(mask) {
    return sel.maskedSelect(this, mask);
  },
  nonzero(options?: { asTuple?: boolean }) {
    // One body for both overloads: the declaration above types each.
    return sel.nonzero(this, options as { asTuple: true });
  },
  multinomial(numSamples, replacement = false) {
    return smp.multinomial(this, numSamples, replacement);
  },
} as Partial<Tensor> & ThisType<Tensor>);
