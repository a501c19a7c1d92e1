/**
 * The op methods of Tensor (`t.add(u)`, `t.sum()`, `t.backward()`, ...), installed on its prototype
 * from here, as tfjs installs its chained ops. lib/tensor.ts imports no op, so the ops may import
 * Tensor without a runtime cycle; declaration merging below keeps every method typed and documented.
 * lib/index.ts imports this module before anything else can run an op.
 */
import { Tensor, type TensorLike } from '../tensor';
import { backward } from '../autograd/engine';
import * as ew from './elementwise';
import * as red from './reduce';
import * as lin from './linalg';
import * as shp from './shape';
import { stridesOf } from './strides';
import { normDim } from './util';
import * as idx from './indexing';
import './methods_ext';
// The methods of ops generated from the manifest (exp, eq, ...), typed and installed there.
import './generated/methods';
import { copy_ as copyInPlace } from './inplace';

declare module '../tensor' {
  interface Tensor {
    /**
     * Computes gradients of this tensor with respect to graph leaves (accumulated into `.grad`).
     * `grad` defaults to ones for a one-element tensor. Backward frees the graph (what its ops
     * saved) as it goes, so a second backward through it throws, unless `retainGraph` is true.
     * `t.backward({ retainGraph: true })` is short for `t.backward(undefined, { retainGraph: true })`.
     */
    backward(options?: { retainGraph?: boolean }): void;
    backward(grad?: Tensor | null, options?: { retainGraph?: boolean }): void;

    // ---- element-wise ----
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

    // ---- reductions ----
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
    softmax(dim?: number): Tensor;
    logSoftmax(dim?: number): Tensor;

    // ---- linear algebra ----
    /** Matrix product with NumPy semantics (1-D, 2-D, batched with broadcasting). */
    matmul(other: Tensor): Tensor;

    // ---- shapes ----
    /** A view with a new shape (`reshape(2, 3)` or `reshape([2, 3])`; one dim may be -1). */
    reshape(...shape: number[] | [number[]]): Tensor;
    /**
     * This tensor with a new shape, as torch.Tensor.view: throws ERR_SHAPE when the shape cannot be
     * expressed with strides over its memory (after a transpose, say); reshape copies instead.
     */
    view(...shape: number[] | [number[]]): Tensor;
    /** PyTorch's strides of this tensor (its view ops' strides; computed results are contiguous), or one dim's. */
    stride(): number[];
    stride(dim: number): number;
    /** Whether PyTorch's strides of this tensor are contiguous (false after transpose, narrow of a later dim, expand). */
    isContiguous(): boolean;
    flatten(startDim?: number, endDim?: number): Tensor;
    squeeze(dim?: number | number[]): Tensor;
    unsqueeze(dim: number): Tensor;
    expand(...shape: number[] | [number[]]): Tensor;
    transpose(dim0?: number, dim1?: number): Tensor;
    /** The transpose of a 2-D tensor. */
    readonly T: Tensor;
    permute(...dims: number[] | [number[]]): Tensor;
    narrow(dim: number, start: number, length: number): Tensor;
    /** Python-style slice along `dim`: [start, end), negative indices from the end, clamped. */
    slice(dim: number, start?: number, end?: number): Tensor;
    /** The slice at `index` along `dim`, that dim removed (torch.select); negative dim and index count from the end. */
    select(dim: number, index: number): Tensor;
    split(sizeOrSections: number | number[], dim?: number): Tensor[];
    chunk(chunks: number, dim?: number): Tensor[];

    // ---- indexing ----
    indexSelect(dim: number, index: Tensor): Tensor;
    gather(dim: number, index: Tensor): Tensor;
    scatterAdd(dim: number, index: Tensor, src: Tensor): Tensor;
  }
}

/** Defines the methods as class methods are: non-enumerable, writable, configurable. */
export function install(methods: Partial<Tensor> & ThisType<Tensor>): void {
  for (const [name, value] of Object.entries(methods))
    Object.defineProperty(Tensor.prototype, name, { value, writable: true, configurable: true, enumerable: false });
}

install({
  backward(grad?: unknown, options?: unknown) {
    backward(this, grad, options);
  },

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
  softmax(dim = -1) {
    return red.softmax(this, dim);
  },
  logSoftmax(dim = -1) {
    return red.logSoftmax(this, dim);
  },

  matmul(o) {
    return lin.matmul(this, o);
  },

  reshape(...shape) {
    return shp.reshape(this, shp.shapeArgs(shape));
  },
  view(...shape) {
    return shp.view(this, shp.shapeArgs(shape));
  },
  stride: function (this: Tensor, dim?: number) {
    const st = stridesOf(this);
    return dim === undefined ? st : st[normDim('stride', dim, this.ndim)];
  } as Tensor['stride'],
  isContiguous() {
    return this._strides === undefined;
  },
  contiguous() {
    return shp.contiguous(this);
  },
  flatten(startDim = 0, endDim = -1) {
    return shp.flatten(this, startDim, endDim);
  },
  squeeze(dim) {
    return shp.squeeze(this, dim);
  },
  unsqueeze(dim) {
    return shp.unsqueeze(this, dim);
  },
  expand(...shape) {
    return shp.expand(this, shp.shapeArgs(shape));
  },
  transpose(dim0 = 0, dim1 = 1) {
    return shp.transpose(this, dim0, dim1);
  },
  permute(...dims) {
    return shp.permute(this, shp.shapeArgs(dims));
  },
  narrow(dim, start, length) {
    return shp.narrow(this, dim, start, length);
  },
  slice(dim, start, end) {
    return shp.slice(this, dim, start, end);
  },
  select(dim, index) {
    return shp.select(this, dim, index);
  },
  split(sizeOrSections, dim = 0) {
    return shp.split(this, sizeOrSections, dim);
  },
  chunk(chunks, dim = 0) {
    return shp.chunk(this, chunks, dim);
  },

  indexSelect(dim, index) {
    return idx.indexSelect(this, dim, index);
  },
  gather(dim, index) {
    return idx.gather(this, dim, index);
  },
  scatterAdd(dim, index, src) {
    return idx.scatterAdd(this, dim, index, src);
  },
});

Object.defineProperty(Tensor.prototype, 'T', {
  get(this: Tensor) {
    return shp.transpose(this, 0, 1);
  },
  configurable: true,
  enumerable: false,
});
