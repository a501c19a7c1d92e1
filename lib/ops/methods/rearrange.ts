import * as re from '../rearrange';
import { install, listArgs } from './install';

declare module '../../tensor' {
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
  }
}

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
});
