/** The element-wise methods: arithmetic, activations, comparisons, casts and copies (`t.add(u)`, `t.to('f64')`, `t.isclose(u)`). */
import * as ew from '../elementwise';
import * as pr from '../predicates';
import { copy_ as copyInPlace } from '../inplace';
import { install } from './install';

declare module '../../tensor' {
  interface Tensor {
    /** `this + alpha * other`, broadcasting. */
    add(other: TensorLike, alpha?: number): Tensor;
    /** `this - alpha * other`, broadcasting. */
    sub(other: TensorLike, alpha?: number): Tensor;
    mul(other: TensorLike): Tensor;
    /** True division: integer inputs give f32. */
    div(other: TensorLike): Tensor;
    pow(exponent: TensorLike): Tensor;
    maximum(other: TensorLike): Tensor;
    minimum(other: TensorLike): Tensor;
    gelu(approximate?: 'none' | 'tanh'): Tensor;
    /** Limits values to [min, max]: number bounds, or tensor bounds that broadcast. */
    clamp(min?: TensorLike | null, max?: TensorLike | null): Tensor;
    /** A copy with `value` wherever `mask` (a bool tensor, broadcast) is true. */
    maskedFill(mask: Tensor, value: number): Tensor;
    /** `this + weight * (end - this)`. */
    lerp(end: Tensor, weight: TensorLike): Tensor;
    isclose(other: Tensor, options?: pr.CloseOptions): Tensor;
    allclose(other: Tensor, options?: pr.CloseOptions): boolean;
    /**
     * This tensor converted to a dtype (PyTorch's names are aliases: 'float32', 'long', ...), moved
     * to a device ('cpu', 'cuda:N'), or both (`{ dtype, device }`); itself when nothing changes.
     */
    to(target: ew.ToTarget): Tensor;
    clone(): Tensor;
    /** `to('f32')`, as PyTorch's `t.float()`. */
    float(): Tensor;
    /** `to('f64')`. */
    double(): Tensor;
    /** `to('f16')`. */
    half(): Tensor;
    /** `to('bf16')`. */
    bfloat16(): Tensor;
    /** `to('i64')`. */
    long(): Tensor;
    /** `to('i32')`. */
    int(): Tensor;
    /** `to('bool')`. */
    bool(): Tensor;
    /** Copies `src` into this tensor in place: src broadcasts, is cast and moved; recorded by autograd (lib/ops/inplace.ts). */
    copy_(src: Tensor): this;
  }
}

install({
  add(o, alpha) {
    return ew.add(this, o, alpha);
  },
  sub(o, alpha) {
    return ew.sub(this, o, alpha);
  },
  mul(o) {
    return ew.mul(this, o);
  },
  div(o) {
    return ew.div(this, o);
  },
  pow(o) {
    return ew.pow(this, o);
  },
  maximum(o) {
    return ew.maximum(this, o);
  },
  minimum(o) {
    return ew.minimum(this, o);
  },
  gelu(approximate = 'none') {
    return ew.gelu(this, approximate);
  },
  clamp(min, max) {
    return ew.clamp(this, min, max);
  },
  maskedFill(mask, value) {
    return ew.maskedFill(this, mask, value);
  },
  lerp(end, weight) {
    return ew.lerp(this, end, weight);
  },
  isclose(other, options) {
    return pr.isclose(this, other, options);
  },
  allclose(other, options) {
    return pr.allclose(this, other, options);
  },
  to(target) {
    return ew.to(this, target);
  },
  clone() {
    return ew.clone(this);
  },
  float() {
    return ew.to(this, 'f32');
  },
  double() {
    return ew.to(this, 'f64');
  },
  half() {
    return ew.to(this, 'f16');
  },
  bfloat16() {
    return ew.to(this, 'bf16');
  },
  long() {
    return ew.to(this, 'i64');
  },
  int() {
    return ew.to(this, 'i32');
  },
  bool() {
    return ew.to(this, 'bool');
  },
  copy_(src) {
    copyInPlace(this, src);
    return this;
  },
});
