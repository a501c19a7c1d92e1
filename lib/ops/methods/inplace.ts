/** The in-place methods; each returns this (see lib/ops/inplace.ts for the autograd rules). */
import * as ip from '../inplace';
import { install } from './install';

declare module '../../tensor' {
  interface Tensor {
    add_(other: TensorLike, alpha?: number): this;
    sub_(other: TensorLike, alpha?: number): this;
    mul_(other: TensorLike): this;
    div_(other: TensorLike): this;
    clamp_(min?: TensorLike | null, max?: TensorLike | null): this;
    fill_(value: number | boolean | Tensor): this;
    zero_(): this;
    uniform_(from?: number, to?: number): this;
    normal_(mean?: number, std?: number): this;
  }
}

install({
  add_(other, alpha = 1) {
    return ip.add_(this, other, alpha) as never;
  },
  sub_(other, alpha = 1) {
    return ip.sub_(this, other, alpha) as never;
  },
  mul_(other) {
    return ip.mul_(this, other) as never;
  },
  div_(other) {
    return ip.div_(this, other) as never;
  },
  clamp_(min, max) {
    return ip.clamp_(this, min, max) as never;
  },
  fill_(value) {
    return ip.fill_(this, value) as never;
  },
  zero_() {
    return ip.zero_(this) as never;
  },
  uniform_(from = 0, to = 1) {
    return ip.uniform_(this, from, to) as never;
  },
  normal_(mean = 0, std = 1) {
    return ip.normal_(this, mean, std) as never;
  },
});
