/** Cases for scatter, scatterReduce and indexAdd (lib/manifest/scatter.ts); indices are fixed or drawn, never differentiated. */
import type { Arr, OpCase } from '../harness/types';
import { arr, forEachScatter, reduceScattered } from './ref';

type Reduce = 'sum' | 'prod' | 'mean' | 'amax' | 'amin';

/** x with src reduced in along dim at index (src may be larger than index); `write` replaces instead. */
function scatterRef(x: Arr, dim: number, index: Arr, src: Arr, reduce: Reduce | 'write', includeSelf = true, intMean = false): Arr {
  const groups: number[][] = Array.from(x.data, (v) => (includeSelf || reduce === 'write' ? [v] : []));
  const touched = new Set<number>();
  forEachScatter(x, dim, index, src, (k, s) => {
    if (reduce === 'write') groups[k] = [src.data[s]];
    else groups[k].push(src.data[s]);
    touched.add(k);
  });
  return arr(x.shape, (k) => {
    if (!touched.has(k)) return x.data[k];
    return reduce === 'write' ? groups[k][0] : reduceScattered(reduce, groups[k], intMean);
  });
}

// Index rows without repeats, so plain scatter has one write per target (as torch, a repeated
// target keeps an unspecified write) and its gradient is defined.
const uniqueIndex = (rows: number, cols: number, size: number) => ({
  shape: [rows, cols],
  kind: 'int' as const,
  noGrad: true,
  values: Array.from({ length: rows * cols }, (_, i) => (Math.floor(i / cols) + (i % cols) * 2) % size),
});
const drawn = (shape: number[], high: number) => ({ shape, kind: 'int' as const, high, noGrad: true });

const reduceCases: OpCase[] = (['sum', 'prod', 'mean', 'amax', 'amin'] as const).flatMap((reduce) =>
  [true, false].map(
    (includeSelf): OpCase => ({
      op: 'scatterReduce',
      label: `${reduce}, includeSelf ${includeSelf}`,
      inputs: [{ shape: [3, 5] }, drawn([3, 4], 5), { shape: [3, 6] }],
      // About 8 sources per target at every size: CUDA accumulates bf16/f16 with one rounding per
      // atomic add (as PyTorch's kernels do), in whatever order the blocks run, so hundreds of
      // duplicates would drift past the dtype's tolerance on any GPU.
      sized: (n) => [{ shape: [2, Math.max(7, Math.ceil(n / 8))] }, drawn([2, n], Math.max(7, Math.ceil(n / 8))), { shape: [2, n] }],
      run: (x, i, s) => x.scatterReduce(1, i, s, reduce, { includeSelf }),
      reference: (x, i, s) => scatterRef(x, 1, i, s, reduce, includeSelf),
      dtypes: ['f32', 'f64', 'bf16', 'f16'],
      tol: reduce === 'prod' ? { f32: [1e-4, 1e-5], bf16: [4e-2, 4e-2], f16: [1e-2, 1e-2] } : { f32: [1e-5, 1e-5], bf16: [3e-2, 3e-2] },
    }),
  ),
);

export const cases: OpCase[] = [
  {
    op: 'scatter',
    inputs: [{ shape: [3, 5] }, uniqueIndex(3, 2, 5), { shape: [4, 3] }],
    run: (x, i, s) => x.scatter(1, i, s),
    reference: (x, i, s) => scatterRef(x, 1, i, s, 'write'),
    dtypes: ['f32', 'f64', 'bf16', 'f16'],
  },
  {
    op: 'scatter',
    label: 'a number along dim 0, integers',
    inputs: [{ shape: [4, 3], kind: 'int' }, drawn([2, 3], 4)],
    sized: (n) => [{ shape: [Math.max(n, 1), 2], kind: 'int' }, drawn([n, 2], Math.max(n, 1))],
    run: (x, i) => x.scatter(0, i, -3),
    reference: (x, i) =>
      scatterRef(
        x,
        0,
        i,
        arr(i.shape, () => -3),
        'write',
      ),
    dtypes: ['i64'],
    grad: false,
  },
  ...reduceCases,
  {
    op: 'scatterReduce',
    label: 'integer mean rounds down',
    inputs: [{ shape: [2, 4], kind: 'int', high: 20 }, drawn([2, 3], 4), { shape: [2, 3], kind: 'int', high: 20 }],
    run: (x, i, s) => x.sub(10).scatterReduce(1, i, s.sub(10), 'mean'),
    reference: (x, i, s) =>
      scatterRef({ ...x, data: x.data.map((v) => v - 10) }, 1, i, { ...s, data: s.data.map((v) => v - 10) }, 'mean', true, true),
    dtypes: ['i64'],
    grad: false,
  },
  {
    op: 'indexAdd',
    inputs: [{ shape: [4, 3] }, drawn([5], 4), { shape: [5, 3] }],
    // About 8 sources per target at every size, as for scatterReduce above.
    sized: (n) => [{ shape: [Math.max(3, Math.ceil(n / 8)), 2] }, drawn([n], Math.max(3, Math.ceil(n / 8))), { shape: [n, 2] }],
    run: (x, i, s) => x.indexAdd(0, i, s, { alpha: 0.5 }),
    reference: (x, i, s) => {
      const out = Float64Array.from(x.data);
      const cols = x.shape[1];
      i.data.forEach((k, j) => {
        for (let c = 0; c < cols; c++) out[k * cols + c] += 0.5 * s.data[j * cols + c];
      });
      return arr(x.shape, out);
    },
    dtypes: ['f32', 'f64', 'bf16', 'f16'],
    tol: { f32: [1e-5, 1e-5], bf16: [3e-2, 3e-2] },
  },
];
