/**
 * The Tensor: a typed handle to native storage plus autograd state. It imports no op: the op
 * methods (`t.add`, `t.sum`, `t.backward`, ...) are installed by lib/ops/methods/ (and t.backward by lib/autograd/methods.ts), which keep
 * the runtime import graph acyclic (ops import this file, never the reverse).
 */
import { inspect } from 'node:util';
import { native, type NativeTensor, type NewTensor } from './native';
import { type CanonicalDType, isFloating, viewBytes } from './dtype';
import { flockError } from './errors';
import { track, untrack } from './memory';
import type { Node } from './dispatch/record';

export type Scalar = number;
export type TensorLike = Tensor | number;
// biome-ignore lint/suspicious/noConfusingVoidType: a hook may return nothing (void) or a replacement gradient
export type GradHook = (grad: Tensor) => Tensor | void;

function halfToFloat(bits: Uint16Array, dtype: CanonicalDType): Float32Array {
  const out = new Float32Array(bits.length);
  if (dtype === 'bf16') {
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < bits.length; i++) u[i] = bits[i] << 16;
    return out;
  }
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i],
      s = h & 0x8000 ? -1 : 1,
      e = (h >> 10) & 0x1f,
      m = h & 0x3ff;
    out[i] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  return out;
}

/** What an in-place write count holds: the count and the op of the latest write. */
interface VersionCounter {
  value: number;
  op: string;
}

const NO_HOOKS: readonly GradHook[] = Object.freeze([]);

const returned = native.returned;
const metas = native.metas;
// Frees the handles of tensors the garbage collector took undisposed. A tensor created inside a
// tidy scope joins this registry only if it leaves every scope undisposed (see memory.ts).
const undisposed = new FinalizationRegistry<NativeTensor>((h) => native.dispose(h));

export type TensorData = Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;

/** Values nested as a tensor's dims are, as `tolist()` returns them. */
export type NestedList<T> = Array<T | NestedList<T>>;
/** What `tolist()` returns: a number or boolean for a 0-d tensor, nested arrays of them otherwise. */
export type TensorList = number | boolean | NestedList<number | boolean>;

export class Tensor {
  #h: NativeTensor | null;
  #shape: readonly number[];
  #dtype: CanonicalDType;
  #device: string;
  /** Whether gradients flow to this tensor. Set on leaves with {@link requiresGrad_}. */
  requiresGrad = false;
  /** The accumulated gradient of a leaf after backward(). */
  grad: Tensor | null = null;
  /** The op that produced this tensor, for autograd; null on leaves. */
  gradFn: Node | null = null;
  /** @internal gradient hooks, see {@link registerHook}; replaced, never mutated, when one is added or removed. */
  _hooks: readonly GradHook[] = NO_HOOKS;
  #version: VersionCounter | null = null;
  #registered = false;
  /** @internal the tidy scope that will dispose this tensor (lib/memory.ts). */
  _scope: unknown[] | null = null;
  /** @internal the strides PyTorch would give this tensor when it is a non-contiguous view (lib/ops/strides.ts); undefined when contiguous. */
  _strides: readonly number[] | undefined = undefined;

  /** @internal use the creation functions (fl.tensor, fl.zeros, ...). */
  constructor(handle: NewTensor) {
    // The op that returned `handle` left its metadata in `returned`, so an op makes one native
    // call, not two; any other handle goes through native.meta, which checks it.
    const m = returned[1] === handle ? metas[returned[0] | 0] : native.meta(handle);
    this.#h = handle as number as NativeTensor;
    this.#shape = m.shape;
    this.#dtype = m.dtype;
    this.#device = m.device;
    track(this);
  }

  // Read-only: a write throws (READ_ONLY below), as a write to a PyTorch tensor's shape does; a
  // TypeScript `readonly` alone would let plain JavaScript change the shape and lie about the storage.
  get shape(): readonly number[] {
    return this.#shape;
  }

  /** The element type's short name ('f32', 'i64', ...), whatever name created it. */
  get dtype(): CanonicalDType {
    return this.#dtype;
  }

  get device(): string {
    return this.#device;
  }

  /** @internal called once no tidy scope holds this tensor: the garbage collector frees it if never disposed. */
  _unscoped(): void {
    if (this.#registered || this.#h === null) return;
    this.#registered = true;
    undisposed.register(this, this.#h, this);
  }

  /**
   * @internal in-place write count, shared with the views of this storage (dispatch/version.ts);
   * made when first read, so tensors that never meet autograd or in-place ops do not allocate one.
   */
  get _version(): VersionCounter {
    if (this.#version === null) this.#version = { value: 0, op: '' };
    return this.#version;
  }

  set _version(counter: VersionCounter) {
    this.#version = counter;
  }

  /** @internal the native handle; throws ERR_DISPOSED after dispose(). */
  get handle(): NativeTensor {
    if (this.#h === null) throw flockError('ERR_DISPOSED', 'tensor', 'tensor has been disposed');
    return this.#h;
  }

  get isDisposed(): boolean {
    return this.#h === null;
  }

  get ndim(): number {
    return this.shape.length;
  }

  /**
   * The shape as a new array, as PyTorch's `size()`; `size(dim)` is the size of one dim (negative
   * dims count from the end). The element count is {@link numel}.
   */
  size(): number[];
  size(dim: number): number;
  size(dim?: number): number[] | number {
    if (dim === undefined) return [...this.shape];
    const n = this.shape.length;
    if (!Number.isInteger(dim)) throw flockError('ERR_ARG', 'size', `dim must be an integer, got ${dim}`);
    if (dim < -n || dim >= n) throw flockError('ERR_INDEX', 'size', `dim ${dim} is out of range for a tensor of ${n} dimensions`);
    return this.shape[dim < 0 ? dim + n : dim];
  }

  /** The number of elements. */
  numel(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }

  get isLeaf(): boolean {
    return this.gradFn === null;
  }

  /** Frees this tensor's memory (queued work that still reads it keeps it alive until done). */
  dispose(): void {
    const h = this._release();
    if (h !== null) native.dispose(h);
  }

  /**
   * @internal marks this tensor disposed and returns its handle (null if it was already), which
   * the caller must dispose: a tidy scope disposes all of its tensors' handles in one native call.
   */
  _release(): NativeTensor | null {
    const h = this.#h;
    if (h === null) return null;
    this.#h = null;
    if (this.#registered) {
      undisposed.unregister(this);
      this.#registered = false;
    }
    untrack(this);
    return h;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /**
   * @internal Makes this tensor share `source`'s storage, shape, dtype and device, keeping its
   * identity (autograd state, hooks, references held by optimizers). Used by Module.to().
   */
  _adopt(source: Tensor): void {
    const h = native.reshape(source.handle, [...source.shape]) as number as NativeTensor;
    if (this.#h !== null) native.dispose(this.#h);
    this.#h = h;
    if (this.#registered) {
      undisposed.unregister(this);
      undisposed.register(this, h, this);
    }
    this.#shape = source.shape;
    this.#dtype = source.dtype;
    this.#device = source.device;
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

  static #decode(buf: ArrayBuffer, dtype: CanonicalDType): TensorData {
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
    if (this.numel() !== 1)
      throw flockError('ERR_SHAPE', 'item', `expected a tensor with one element, got shape [${this.shape.join(',')}]`);
  }

  /** The values as nested arrays (blocking). */
  toArray(): unknown {
    return this.#nest(Array.from(this.dataSync() as ArrayLike<number | bigint>, (v) => Number(v)));
  }

  /**
   * The values as nested arrays, as PyTorch's `tolist()`: a 0-d tensor gives its value, a 1-d tensor
   * an array, an n-d tensor arrays of arrays. Floating and integer values are numbers, bool values
   * booleans; an i64 value beyond ±2^53 cannot be a number exactly, so it throws ERR_RANGE (read
   * those with data(), a BigInt64Array).
   */
  async tolist(): Promise<TensorList> {
    const dtype = this.dtype;
    return this.#nest(Tensor.#listValues(await this.data(), dtype));
  }

  /** Blocking twin of {@link tolist}. */
  tolistSync(): TensorList {
    return this.#nest(Tensor.#listValues(this.dataSync(), this.dtype));
  }

  static #listValues(data: TensorData, dtype: CanonicalDType): Array<number | boolean> {
    if (dtype === 'bool') return Array.from(data as Uint8Array, (v) => v !== 0);
    if (!(data instanceof BigInt64Array)) return Array.from(data as ArrayLike<number>);
    return Array.from(data, (v) => {
      const n = Number(v);
      if (!Number.isSafeInteger(n))
        throw flockError('ERR_RANGE', 'tolist', `the i64 value ${v} is beyond ±2^53 and has no exact number; read it with data()`);
      return n;
    });
  }

  #nest<T>(flat: T[]): T | NestedList<T> {
    const build = (dim: number, off: number): T | NestedList<T> => {
      if (dim === this.shape.length) return flat[off];
      const stride = this.shape.slice(dim + 1).reduce((a, b) => a * b, 1);
      return Array.from({ length: this.shape[dim] }, (_, i) => build(dim + 1, off + i * stride));
    };
    return build(0, 0);
  }

  /**
   * `Tensor(shape=[2, 2], dtype=f32, device=cpu) [[1.5, 2], [3, 4]]`: the values are shown for
   * tensors of at most {@link Tensor.printLimit} elements, read synchronously (a sync point, as
   * dataSync()). A disposed tensor prints as disposed and never throws.
   */
  toString(): string {
    const head = `shape=[${this.shape.join(', ')}], dtype=${this.dtype}, device=${this.device}`;
    if (this.isDisposed) return `Tensor(${head}, disposed)`;
    const flags = this.requiresGrad ? (this.gradFn ? `, gradFn=${this.gradFn.name}` : ', requiresGrad') : '';
    const text = `Tensor(${head}${flags})`;
    return this.numel() <= Tensor.printLimit ? `${text} ${this.#valuesText()}` : text;
  }

  /** Tensors with at most this many elements show their values when printed. */
  static printLimit = 20;

  [inspect.custom](): string {
    return this.toString();
  }

  #valuesText(): string {
    const floating = isFloating(this.dtype);
    const fmt = (v: number | bigint): string =>
      this.dtype === 'bool' ? String(v !== 0) : typeof v === 'bigint' || !floating ? String(v) : String(Number(v.toPrecision(6)));
    const flat = Array.from(this.dataSync() as ArrayLike<number | bigint>, fmt);
    const build = (dim: number, off: number): string => {
      if (dim === this.shape.length) return flat[off];
      const stride = this.shape.slice(dim + 1).reduce((a, b) => a * b, 1);
      return `[${Array.from({ length: this.shape[dim] }, (_, i) => build(dim + 1, off + i * stride)).join(', ')}]`;
    };
    return build(0, 0);
  }

  // ---- autograd ----
  /** Marks a leaf as requiring grad (in place) and returns it; only floating tensors can. */
  requiresGrad_(flag = true): this {
    if (!this.isLeaf && !flag) throw flockError('ERR_AUTOGRAD', 'requiresGrad_', 'only leaves can stop requiring grad; use detach()');
    if (flag && !isFloating(this.dtype))
      throw flockError(
        'ERR_DTYPE',
        'requiresGrad_',
        `only floating tensors (f32, f64, bf16, f16) can require gradients, got ${this.dtype}`,
      );
    this.requiresGrad = flag;
    return this;
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
    this._hooks = [...this._hooks, hook];
    return () => {
      this._hooks = this._hooks.filter((h) => h !== hook);
    };
  }

  /**
   * This tensor when PyTorch's strides of it are contiguous, else one that is (storage is always
   * contiguous here, so no copy is made; lib/ops/methods/shape.ts installs the op that records it).
   */
  contiguous(): Tensor {
    return this;
  }
}

/** What a write to each read-only property should use instead. */
const READ_ONLY: Readonly<Record<string, string>> = {
  shape: 'reshape() or view() make a tensor of another shape',
  dtype: 'to(dtype) makes a converted copy',
  device: 'to(device) makes a moved copy',
  ndim: 'reshape() makes a tensor of another shape',
  isLeaf: 'detach() makes a leaf',
  isDisposed: 'dispose() frees the tensor',
  handle: 'the handle belongs to the tensor',
};
for (const [name, instead] of Object.entries(READ_ONLY)) {
  const get = Object.getOwnPropertyDescriptor(Tensor.prototype, name)?.get;
  Object.defineProperty(Tensor.prototype, name, {
    get,
    set() {
      throw flockError('ERR_ARG', 'Tensor', `${name} is read-only; ${instead}`);
    },
    configurable: true,
    enumerable: false,
  });
}
