import * as re from '../rearrange';
import { install, listArgs } from './install';

declare module '../../tensor' {
  interface Tensor {
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
