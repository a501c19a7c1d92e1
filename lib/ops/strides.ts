/**
 * PyTorch's strides, kept as metadata: flockml's storage is always contiguous (a transpose
 * copies), but a tensor remembers the strides PyTorch would give it (`_strides`, undefined when
 * contiguous), so `view` accepts and refuses exactly the shapes PyTorch's does and code that runs
 * here runs under PyTorch. Only the view ops set them (permute/transpose, narrow/slice, select,
 * expand, and view/reshape of such a tensor); every computing op returns a contiguous tensor.
 */
import type { Tensor } from '../tensor';

/** Row-major strides of `shape`. */
function contiguousStrides(shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length);
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    out[d] = s;
    s *= shape[d];
  }
  return out;
}

/** The strides PyTorch gives `t` (`t.stride()`). */
export function stridesOf(t: Tensor): number[] {
  return t._strides ? [...t._strides] : contiguousStrides(t.shape);
}

/** Whether `strides` are those of a contiguous tensor of `shape` (size-1 dims' strides do not count, as PyTorch's is_contiguous). */
function isContiguousStrides(shape: readonly number[], strides: readonly number[]): boolean {
  let expected = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (shape[d] === 0) return true;
    if (shape[d] === 1) continue;
    if (strides[d] !== expected) return false;
    expected *= shape[d];
  }
  return true;
}

/** Stores `strides` on `t` (nothing when they are contiguous). Returns `t`. */
export function withStrides(t: Tensor, strides: readonly number[]): Tensor {
  t._strides = isContiguousStrides(t.shape, strides) ? undefined : [...strides];
  return t;
}

/**
 * PyTorch's at::detail::computeStride: the strides that view `oldShape`/`oldStride` memory as
 * `newShape`, or null when no strides can (a dim to merge spans memory that is not one run).
 */
export function computeStride(oldShape: readonly number[], oldStride: readonly number[], newShape: readonly number[]): number[] | null {
  const numel = oldShape.reduce((a, b) => a * b, 1);
  const newStride = new Array<number>(newShape.length).fill(0);
  if (numel === 0) {
    if (oldShape.length === newShape.length && oldShape.every((s, i) => s === newShape[i])) return [...oldStride];
    for (let d = newShape.length - 1; d >= 0; d--)
      newStride[d] = d === newShape.length - 1 ? 1 : Math.max(newShape[d + 1], 1) * newStride[d + 1];
    return newStride;
  }
  let viewD = newShape.length - 1;
  // the stride of the last dim of the current chunk of old dims
  let chunkBaseStride = oldStride.length ? oldStride[oldStride.length - 1] : 1;
  let tensorNumel = 1,
    viewNumel = 1;
  for (let tensorD = oldShape.length - 1; tensorD >= 0; tensorD--) {
    tensorNumel *= oldShape[tensorD];
    // a chunk ends where the next old dim does not continue this one's memory
    if (tensorD === 0 || (oldShape[tensorD - 1] !== 1 && oldStride[tensorD - 1] !== tensorNumel * chunkBaseStride)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] === 1)) {
        newStride[viewD] = viewNumel * chunkBaseStride;
        viewNumel *= newShape[viewD];
        viewD--;
      }
      if (viewNumel !== tensorNumel) return null;
      if (tensorD > 0) {
        chunkBaseStride = oldStride[tensorD - 1];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD !== -1) return null;
  return newStride;
}
