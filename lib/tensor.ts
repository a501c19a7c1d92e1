/** The Tensor: a typed handle to native storage plus autograd state. Ops live in lib/ops/. */
import { native, type NativeTensor } from './native';
import { type DType, viewBytes } from './dtype';
import { track } from './memory';
import type { Node } from './autograd/node';
import * as ew from './ops/elementwise';
import * as red from './ops/reduce';
import * as lin from './ops/linalg';
import * as shp from './ops/shape';
import * as idx from './ops/index';
import { backward as runBackward } from './autograd/engine';

export type Scalar = number;
export type TensorLike = Tensor | number;
export type GradHook = (grad: Tensor) => Tensor | void;

function disposedError(op: string): TypeError {
  return Object.assign(new TypeError(`${op}: tensor has been disposed`), { code: 'ERR_DISPOSED' });
}

function halfToFloat(bits: Uint16Array, dtype: DType): Float32Array {
  const out = new Float32Array(bits.length);
  if (dtype === 'bf16') {
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < bits.length; i++) u[i] = bits[i] << 16;
    return out;
  }
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i], s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    out[i] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  return out;
}

export type TensorData = Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;

export class Tensor {
  #h: NativeTensor | null;
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly device: string;
  /** Whether gradients flow to this tensor. Set on leaves with {@link requiresGrad_}. */
  requiresGrad = false;
  /** The accumulated gradient of a leaf after backward(). */
  grad: Tensor | null = null;
  /** The op that produced this tensor, for autograd; null on leaves. */
  gradFn: Node | null = null;
  /** @internal gradient hooks, see {@link registerHook}. */
  _hooks: GradHook[] = [];
  /** @internal in-place write count, shared with the views of this storage (autograd/version.ts). */
  _version = { value: 0, op: '' };

  /** @internal use the creation functions (fl.tensor, fl.zeros, ...). */
  constructor(handle: NativeTensor) {
    this.#h = handle;
    const m = native.meta(handle);
    this.shape = Object.freeze(m.shape);
    this.dtype = m.dtype;
    this.device = m.device;
    track(this);
  }

  /** @internal the native handle; throws ERR_DISPOSED after dispose(). */
  get handle(): NativeTensor {
    if (this.#h === null) throw disposedError('tensor');
    return this.#h;
  }

  get isDisposed(): boolean {
    return this.#h === null;
  }

  get ndim(): number {
    return this.shape.length;
  }

  get size(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }

  get isLeaf(): boolean {
    return this.gradFn === null;
  }

  /** Frees this tensor's memory (queued work that still reads it keeps it alive until done). */
  dispose(): void {
    if (this.#h === null) return;
    native.dispose(this.#h);
    this.#h = null;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /**
   * @internal Makes this tensor share `source`'s storage, shape, dtype and device, keeping its
   * identity (autograd state, hooks, references held by optimizers). Used by Module.to().
   */
  _adopt(source: Tensor): void {
    const h = native.reshape(source.handle, [...source.shape]);
    if (this.#h !== null) native.dispose(this.#h);
    this.#h = h;
    const self = this as { shape: readonly number[]; dtype: DType; device: string };
    self.shape = source.shape;
    self.dtype = source.dtype;
    self.device = source.device;
  }

  // ---- sync points ----
  /** Resolves with the values once all queued work producing them has run. */
  async data(): Promise<TensorData> {
    const dtype = this.dtype;
    const buf = await native.read(this.handle);
    return Tensor.#decode(buf, dtype);
  }

  /** Blocking twin of {@link data}. */
  dataSync(): TensorData {
    return Tensor.#decode(native.readSync(this.handle), this.dtype);
  }

  static #decode(buf: ArrayBuffer, dtype: DType): TensorData {
    const v = viewBytes(buf, dtype);
    return dtype === 'bf16' || dtype === 'f16' ? halfToFloat(v as Uint16Array, dtype) : (v as TensorData);
  }

  /** The single value of a one-element tensor. */
  async item(): Promise<number> {
    this.#checkItem();
    return Number((await this.data())[0]);
  }

  itemSync(): number {
    this.#checkItem();
    return Number(this.dataSync()[0]);
  }

  #checkItem(): void {
    if (this.size !== 1)
      throw Object.assign(new RangeError(`item: expected a tensor with one element, got shape [${this.shape.join(',')}]`), { code: 'ERR_SHAPE' });
  }

  /** The values as nested arrays (blocking). */
  toArray(): unknown {
    const flat = Array.from(this.dataSync() as ArrayLike<number | bigint>, (v) => Number(v));
    const build = (dim: number, off: number): unknown => {
      if (dim === this.shape.length) return flat[off];
      const stride = this.shape.slice(dim + 1).reduce((a, b) => a * b, 1);
      return Array.from({ length: this.shape[dim] }, (_, i) => build(dim + 1, off + i * stride));
    };
    return build(0, 0);
  }

  toString(): string {
    return `Tensor(shape=[${this.shape.join(', ')}], dtype=${this.dtype}, device=${this.device}${this.requiresGrad ? ', requiresGrad' : ''})`;
  }

  // ---- autograd ----
  /** Marks a leaf as requiring grad (in place) and returns it. */
  requiresGrad_(flag = true): this {
    if (!this.isLeaf && !flag) throw new RangeError('requiresGrad_: only leaves can stop requiring grad; use detach()');
    this.requiresGrad = flag;
    return this;
  }

  /**
   * Computes gradients of this tensor with respect to graph leaves (accumulated into `.grad`).
   * `grad` defaults to ones for a one-element tensor. Backward frees the graph (what its ops saved)
   * as it goes, so a second backward through it throws, unless `retainGraph` is true.
   * `t.backward({ retainGraph: true })` is short for `t.backward(undefined, { retainGraph: true })`.
   */
  backward(options?: { retainGraph?: boolean }): void;
  backward(grad?: Tensor | null, options?: { retainGraph?: boolean }): void;
  backward(grad?: Tensor | null | { retainGraph?: boolean }, options?: { retainGraph?: boolean }): void {
    runBackward(this, grad, options);
  }

  /** A tensor sharing storage (and its in-place version counter) with this one, cut from the graph. */
  detach(): Tensor {
    const t = new Tensor(native.reshape(this.handle, [...this.shape]));
    t._version = this._version;
    return t;
  }

  /**
   * Calls `hook(grad)` as soon as this tensor's gradient is final during backward (for a leaf:
   * after the last contribution, before the rest of backward runs). A returned tensor replaces
   * the gradient. Returns a function that removes the hook.
   */
  registerHook(hook: GradHook): () => void {
    if (typeof hook !== 'function') throw new TypeError('registerHook: expected a function');
    if (!this.requiresGrad) throw new RangeError("registerHook: cannot register a hook on a tensor that doesn't require grad");
    this._hooks.push(hook);
    return () => {
      this._hooks = this._hooks.filter((h) => h !== hook);
    };
  }

  // ---- element-wise ----
  add(o: TensorLike, alpha?: number): Tensor { return ew.add(this, o, alpha); }
  sub(o: TensorLike, alpha?: number): Tensor { return ew.sub(this, o, alpha); }
  mul(o: TensorLike): Tensor { return ew.mul(this, o); }
  div(o: TensorLike): Tensor { return ew.div(this, o); }
  pow(o: TensorLike): Tensor { return ew.pow(this, o); }
  maximum(o: TensorLike): Tensor { return ew.maximum(this, o); }
  minimum(o: TensorLike): Tensor { return ew.minimum(this, o); }
  neg(): Tensor { return ew.neg(this); }
  exp(): Tensor { return ew.exp(this); }
  log(): Tensor { return ew.log(this); }
  sqrt(): Tensor { return ew.sqrt(this); }
  rsqrt(): Tensor { return ew.rsqrt(this); }
  abs(): Tensor { return ew.abs(this); }
  sign(): Tensor { return ew.sign(this); }
  square(): Tensor { return ew.square(this); }
  tanh(): Tensor { return ew.tanh(this); }
  sigmoid(): Tensor { return ew.sigmoid(this); }
  relu(): Tensor { return ew.relu(this); }
  gelu(approximate: 'none' | 'tanh' = 'none'): Tensor { return ew.gelu(this, approximate); }
  silu(): Tensor { return ew.silu(this); }
  clamp(min?: number | null, max?: number | null): Tensor { return ew.clamp(this, min, max); }
  eq(o: TensorLike): Tensor { return ew.eq(this, o); }
  ne(o: TensorLike): Tensor { return ew.ne(this, o); }
  lt(o: TensorLike): Tensor { return ew.lt(this, o); }
  le(o: TensorLike): Tensor { return ew.le(this, o); }
  gt(o: TensorLike): Tensor { return ew.gt(this, o); }
  ge(o: TensorLike): Tensor { return ew.ge(this, o); }
  maskedFill(mask: Tensor, value: number): Tensor { return ew.maskedFill(this, mask, value); }
  /** A copy converted to `dtype`, or moved to `device` ('cpu', 'cuda:N'). */
  to(target: DType | string): Tensor { return ew.to(this, target); }
  clone(): Tensor { return ew.clone(this); }
  /** Copies `src` into this tensor in place (same shape, dtype and device); not recorded by autograd. */
  copy_(src: Tensor): this { ew.copy_(this, src); return this; }
  contiguous(): Tensor { return this; }

  // ---- reductions ----
  sum(dim?: number | number[], keepdim = false): Tensor { return red.sum(this, dim, keepdim); }
  mean(dim?: number | number[], keepdim = false): Tensor { return red.mean(this, dim, keepdim); }
  max(dim?: number | number[], keepdim = false): Tensor { return red.max(this, dim, keepdim); }
  min(dim?: number | number[], keepdim = false): Tensor { return red.min(this, dim, keepdim); }
  argmax(dim?: number, keepdim = false): Tensor { return red.argmax(this, dim, keepdim); }
  argmin(dim?: number, keepdim = false): Tensor { return red.argmin(this, dim, keepdim); }
  var(dim?: number | number[], options: { correction?: number; keepdim?: boolean } = {}): Tensor { return red.variance(this, dim, options); }
  std(dim?: number | number[], options: { correction?: number; keepdim?: boolean } = {}): Tensor { return red.std(this, dim, options); }
  logsumexp(dim: number | number[], keepdim = false): Tensor { return red.logsumexp(this, dim, keepdim); }
  softmax(dim = -1): Tensor { return red.softmax(this, dim); }
  logSoftmax(dim = -1): Tensor { return red.logSoftmax(this, dim); }

  // ---- linear algebra ----
  matmul(o: Tensor): Tensor { return lin.matmul(this, o); }

  // ---- shapes ----
  reshape(...shape: number[] | [number[]]): Tensor { return shp.reshape(this, shp.shapeArgs(shape)); }
  view(...shape: number[] | [number[]]): Tensor { return shp.reshape(this, shp.shapeArgs(shape)); }
  flatten(startDim = 0, endDim = -1): Tensor { return shp.flatten(this, startDim, endDim); }
  squeeze(dim?: number): Tensor { return shp.squeeze(this, dim); }
  unsqueeze(dim: number): Tensor { return shp.unsqueeze(this, dim); }
  expand(...shape: number[] | [number[]]): Tensor { return shp.expand(this, shp.shapeArgs(shape)); }
  transpose(dim0 = 0, dim1 = 1): Tensor { return shp.transpose(this, dim0, dim1); }
  get T(): Tensor { return shp.transpose(this, 0, 1); }
  permute(...dims: number[] | [number[]]): Tensor { return shp.permute(this, shp.shapeArgs(dims)); }
  narrow(dim: number, start: number, length: number): Tensor { return shp.narrow(this, dim, start, length); }
  slice(dim: number, start?: number, end?: number): Tensor { return shp.slice(this, dim, start, end); }
  split(sizeOrSections: number | number[], dim = 0): Tensor[] { return shp.split(this, sizeOrSections, dim); }
  chunk(chunks: number, dim = 0): Tensor[] { return shp.chunk(this, chunks, dim); }

  // ---- indexing ----
  indexSelect(dim: number, index: Tensor): Tensor { return idx.indexSelect(this, dim, index); }
  gather(dim: number, index: Tensor): Tensor { return idx.gather(this, dim, index); }
  scatterAdd(dim: number, index: Tensor, src: Tensor): Tensor { return idx.scatterAdd(this, dim, index, src); }
}
