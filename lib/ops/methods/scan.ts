import * as scan from '../scan';
import { install } from './install';

declare module '../../tensor' {
  interface Tensor {
    cumsum(dim: number, options?: scan.ScanOptions): Tensor;
    cumprod(dim: number, options?: scan.ScanOptions): Tensor;
  }
}

install({
  cumsum(dim, options) {
    return scan.cumsum(this, dim, options);
  },
  cumprod(dim, options) {
    return scan.cumprod(this, dim, options);
  },
});
