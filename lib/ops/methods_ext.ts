/**
 * Tensor methods of the rearranging, predicate, norm, product and in-place ops (`t.tril()`,
 * `t.flip(0)`, `t.norm()`, `t.add_(u)`, ...), installed as lib/ops/methods.ts installs the others.
 */
import { Tensor, type TensorLike } from '../tensor';
import * as ew from './elementwise';
import * as re from './rearrange';
import * as pr from './predicates';
import * as nm from './norms';
import * as bl from './blas';
import * as ip from './inplace';

declare module '../tensor' {
  interface Tensor {
    /** The lower triangle of the last two dims (`col - row <= diagonal`), zero elsewhere. */
    tril(diagonal?: number): Tensor;
    /** The upper triangle of the last two dims (`col - row >= diagonal`), zero elsewhere. */
    triu(diagonal?: number): Tensor;
    /** A copy with the elements reversed along `dims`. */
    flip(dims: number | number[]): Tensor;
    /** Rolls elements along `dims` by `shifts`; with no dims, as if flattened. */
    roll(shifts: number | number[], dims?: number | number[]): Tensor;
    /** Repeats the tensor `repeats[i]` times along dim i (extra leading repeats add dims). */
    repeat(...repeats: number[] | [number[]]): Tensor;
    /** numpy's tile: repeat with fewer reps than dims padded by leading 1s. */
    tile(...reps: number[] | [number[]]): Tensor;
    /** The slices along `dim`, with that dim removed. */
    unbind(dim?: number): Tensor[];
    isclose(other: Tensor, options?: pr.CloseOptions): Tensor;
    allclose(other: Tensor, options?: pr.CloseOptions): boolean;
    /** The p-norm over `dim` (all dims by default); see fl.norm. */
    norm(p?: nm.NormOrd, dim?: number | number[], keepdim?: boolean): Tensor;
    /** `this + weight * (end - this)`. */
    lerp(end: Tensor, weight: TensorLike): Tensor;
    /** `beta * this + alpha * (mat1 @ mat2)`. */
    addmm(mat1: Tensor, mat2: Tensor, options?: bl.AddmmOptions): Tensor;
    /** `beta * this + alpha * (batch1 @ batch2)`. */
    baddbmm(batch1: Tensor, batch2: Tensor, options?: bl.AddmmOptions): Tensor;

    // ---- in place (each returns this; see lib/ops/inplace.ts for the autograd rules) ----
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

function install(methods: Partial<Tensor> & ThisType<Tensor>): void {
  for (const [name, value] of Object.entries(methods))
    Object.defineProperty(Tensor.prototype, name, { value, writable: true, configurable: true, enumerable: false });
}

const listArgs = (args: number[] | [number[]]): number[] => (Array.isArray(args[0]) ? [...(args[0] as number[])] : (args as number[]));

install({
  tril(diagonal = 0) {
    return re.tril(this, diagonal);
  },
  triu(diagonal = 0) {
    return re.triu(this, diagonal);
  },
  flip(dims) {
    return re.flip(this, dims);
  },
  roll(shifts, dims) {
    return re.roll(this, shifts, dims);
  },
  repeat(...repeats) {
    return re.repeat(this, listArgs(repeats));
  },
  tile(...reps) {
    return re.tile(this, listArgs(reps));
  },
  unbind(dim = 0) {
    return re.unbind(this, dim);
  },
  isclose(other, options) {
    return pr.isclose(this, other, options);
  },
  allclose(other, options) {
    return pr.allclose(this, other, options);
  },
  norm(p = 'fro', dim, keepdim = false) {
    return nm.norm(this, p, dim, keepdim);
  },
  lerp(end, weight) {
    return ew.lerp(this, end, weight);
  },
  addmm(mat1, mat2, options) {
    return bl.addmm(this, mat1, mat2, options);
  },
  baddbmm(batch1, batch2, options) {
    return bl.baddbmm(this, batch1, batch2, options);
  },
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
