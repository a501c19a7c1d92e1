import * as red from '../reduce';
import * as nm from '../norms';
import { install } from './install';

declare module '../../tensor' {
  interface Tensor {
    sum(dim?: number | number[], keepdim?: boolean): Tensor;
    mean(dim?: number | number[], keepdim?: boolean): Tensor;
    /** The largest element, over dims, or along one dim with its index (`{ values, indices }`), as torch.max. */
    max(dim: number, keepdim?: boolean): red.ValuesIndices;
    max(dim?: number[], keepdim?: boolean): Tensor;
    /** The smallest element; see max. */
    min(dim: number, keepdim?: boolean): red.ValuesIndices;
    min(dim?: number[], keepdim?: boolean): Tensor;
    argmax(dim?: number, keepdim?: boolean): Tensor;
    argmin(dim?: number, keepdim?: boolean): Tensor;
    /** Variance with Bessel's correction unless `correction` says otherwise. */
    var(dim?: number | number[], options?: red.VarOptions): Tensor;
    std(dim?: number | number[], options?: red.VarOptions): Tensor;
    logsumexp(dim: number | number[], keepdim?: boolean): Tensor;
    /** The product of every element, or along `dim`. */
    prod(dim?: number, keepdim?: boolean, options?: { dtype?: import('../../dtype').DType }): Tensor;
    all(dim?: number | number[], keepdim?: boolean): Tensor;
    any(dim?: number | number[], keepdim?: boolean): Tensor;
    /** The p-norm over `dim` (all dims by default); see fl.norm. */
    norm(p?: nm.NormOrd, dim?: number | number[], keepdim?: boolean): Tensor;
    softmax(dim?: number): Tensor;
    logSoftmax(dim?: number): Tensor;
  }
}

install({
  sum(dim, keepdim = false) {
    return red.sum(this, dim, keepdim);
  },
  mean(dim, keepdim = false) {
    return red.mean(this, dim, keepdim);
  },
  max(dim?: number | number[], keepdim = false) {
    // One body for both overloads: the declaration above types each.
    return (typeof dim === 'number' ? red.max(this, dim, keepdim) : red.max(this, dim, keepdim)) as never;
  },
  min(dim?: number | number[], keepdim = false) {
    // One body for both overloads: the declaration above types each.
    return (typeof dim === 'number' ? red.min(this, dim, keepdim) : red.min(this, dim, keepdim)) as never;
  },
  argmax(dim, keepdim = false) {
    return red.argmax(this, dim, keepdim);
  },
  argmin(dim, keepdim = false) {
    return red.argmin(this, dim, keepdim);
  },
  var(dim, options = {}) {
    return red.variance(this, dim, options);
  },
  std(dim, options = {}) {
    return red.std(this, dim, options);
  },
  logsumexp(dim, keepdim = false) {
    return red.logsumexp(this, dim, keepdim);
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
  norm(p = 'fro', dim, keepdim = false) {
    return nm.norm(this, p, dim, keepdim);
  },
  softmax(dim = -1) {
    return red.softmax(this, dim);
  },
  logSoftmax(dim = -1) {
    return red.logSoftmax(this, dim);
  },
});
