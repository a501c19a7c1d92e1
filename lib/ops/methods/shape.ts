/** The shape methods: views, reshapes, permutes, slices and splits (`t.reshape(2, 3)`, `t.T`, `t.narrow(0, 1, 2)`). */
import { Tensor } from '../../tensor';
import * as shp from '../shape';
import { stridesOf } from '../strides';
import { normDim } from '../util';
import { install } from './install';

declare module '../../tensor' {
  interface Tensor {
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
  }
}

install({
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
});

Object.defineProperty(Tensor.prototype, 'T', {
  get(this: Tensor) {
    return shp.transpose(this, 0, 1);
  },
  configurable: true,
  enumerable: false,
});
