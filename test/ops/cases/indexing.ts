/** Cases for the indexing ops (lib/manifest/indexing.ts); indices are inputs excluded from gradients. */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr, forEachScatter, strides } from './ref';

const idx = (shape: number[], high: number, kind: 'int' | 'i32' = 'int') => ({ shape, kind, high, noGrad: true });

/** out[..i..] = x[..index[..i..]..] along dim, for index of x's rank (gather) or 1-d (indexSelect). */
function gatherRef(x: Arr, dim: number, index: Arr, select: boolean): Arr {
  const shape = select ? x.shape.map((s, d) => (d === dim ? index.data.length : s)) : index.shape;
  const xs = strides(x.shape),
    os = strides(shape);
  return arr(shape, (i) => {
    let k = 0;
    for (let d = 0; d < shape.length; d++) {
      const c = Math.floor(i / os[d]) % shape[d];
      k += (d === dim ? index.data[select ? c : i] : c) * xs[d];
    }
    return x.data[k];
  });
}

function scatterAddRef(x: Arr, dim: number, index: Arr, src: Arr): Arr {
  const out = Float64Array.from(x.data);
  forEachScatter(x, dim, index, src, (k, s) => {
    out[k] += src.data[s];
  });
  return arr(x.shape, out);
}

export const cases: OpCase[] = [
  {
    op: 'indexSelect',
    inputs: [{ shape: [4, 3] }, idx([5], 4)],
    sized: (n) => [{ shape: [Math.max(n, 1), 2] }, idx([n], Math.max(n, 1))],
    run: (x, i) => x.indexSelect(0, i),
    reference: (x, i) => gatherRef(x, 0, i, true),
    dtypes: ['f32', 'f64', 'bf16', 'f16', 'i64', 'bool'],
  },
  {
    op: 'indexSelect',
    label: 'dim 1, i32 index',
    inputs: [{ shape: [2, 4] }, idx([3], 4, 'i32')],
    run: (x, i) => x.indexSelect(1, i),
    reference: (x, i) => gatherRef(x, 1, i, true),
  },
  {
    op: 'gather',
    inputs: [{ shape: [3, 4] }, idx([3, 2], 4)],
    sized: (n) => [{ shape: [2, Math.max(n, 1)] }, idx([2, n], Math.max(n, 1))],
    run: (x, i) => x.gather(1, i),
    reference: (x, i) => gatherRef(x, 1, i, false),
    dtypes: ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64'],
  },
  {
    op: 'gather',
    label: 'dim 0',
    inputs: [{ shape: [3, 2] }, idx([4, 2], 3)],
    run: (x, i) => x.gather(0, i),
    reference: (x, i) => gatherRef(x, 0, i, false),
  },
  {
    op: 'scatterAdd',
    inputs: [{ shape: [2, 4] }, idx([2, 3], 4), { shape: [2, 3] }],
    sized: (n) => [{ shape: [2, 5] }, idx([2, n], 5), { shape: [2, n] }],
    run: (x, i, s) => x.scatterAdd(1, i, s),
    reference: (x, i, s) => scatterAddRef(x, 1, i, s),
    dtypes: ['f32', 'f64', 'i32', 'i64'],
    tol: { f32: [1e-5, 1e-5] },
  },
  {
    op: 'oneHot',
    inputs: [idx([2, 3], 5)],
    sized: (n) => [idx([n], 4)],
    dtypes: ['i64'],
    run: (i) => fl.oneHot(i, 5),
    reference: (i) => arr([...i.shape, 5], (k) => (i.data[Math.floor(k / 5)] === k % 5 ? 1 : 0)),
  },
  {
    op: 'oneHot',
    label: 'i32 indices, classes from the largest',
    inputs: [{ shape: [4], kind: 'i32', values: [2, 0, 3, 2] }],
    dtypes: ['i64'],
    run: (i) => fl.oneHot(i),
    reference: (i) => arr([4, 4], (k) => (i.data[Math.floor(k / 4)] === k % 4 ? 1 : 0)),
  },
];
