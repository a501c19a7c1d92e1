/** Comparing an op's outputs with the reference (or CUDA's with the CPU's), element by element. */
import type { DType } from '../../../lib/index';
import type { Arr } from './types';

/** [rtol, atol] by dtype: the rounding of one result in that dtype, with room for a different summation order. */
export const DEFAULT_TOL: Record<string, [number, number]> = {
  f64: [1e-9, 1e-10],
  f32: [2e-5, 2e-5],
  bf16: [2e-2, 2e-2],
  f16: [4e-3, 4e-3],
};

/** Why `got` differs from `want` (shape, or the first element out of tolerance), or null when they agree. */
export function mismatch(got: Arr, want: Arr, [rtol, atol]: [number, number], exact = false): string | null {
  if (got.shape.length !== want.shape.length || got.shape.some((s, i) => s !== want.shape[i]))
    return `shape [${got.shape}] vs expected [${want.shape}]`;
  if (got.data.length !== want.data.length) return `${got.data.length} elements vs expected ${want.data.length}`;
  for (let i = 0; i < want.data.length; i++) {
    const g = got.data[i],
      w = want.data[i];
    if (g === w || (Number.isNaN(g) && Number.isNaN(w))) continue;
    if (!exact && Math.abs(g - w) <= atol + rtol * Math.abs(w)) continue;
    return `element ${i}: got ${g}, expected ${w}`;
  }
  return null;
}

export function tolFor(dtype: DType, tol?: Partial<Record<DType, [number, number]>>): [number, number] {
  return tol?.[dtype] ?? DEFAULT_TOL[dtype] ?? [0, 0];
}
