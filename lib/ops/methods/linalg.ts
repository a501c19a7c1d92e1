import * as lin from '../linalg';
import * as bl from '../blas';
import { install } from './install';

declare module '../../tensor' {
  interface Tensor {
    /** Matrix product with NumPy semantics (1-D, 2-D, batched with broadcasting). */
    matmul(other: Tensor): Tensor;
    /** `beta * this + alpha * (mat1 @ mat2)`. */
    addmm(mat1: Tensor, mat2: Tensor, options?: bl.AddmmOptions): Tensor;
    /** `beta * this + alpha * (batch1 @ batch2)`. */
    baddbmm(batch1: Tensor, batch2: Tensor, options?: bl.AddmmOptions): Tensor;
  }
}

install({
  matmul(o) {
    return lin.matmul(this, o);
  },
  addmm(mat1, mat2, options) {
    return bl.addmm(this, mat1, mat2, options);
  },
  baddbmm(batch1, batch2, options) {
    return bl.baddbmm(this, batch1, batch2, options);
  },
});
