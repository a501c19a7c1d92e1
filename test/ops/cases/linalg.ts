/** Cases for matmul, mm and bmm (lib/manifest/linalg.ts). */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr, matmul2 } from './ref';

/** Batched product with broadcasting over leading dims; 1-d operands as torch.matmul. */
function matmulRef(a: Arr, b: Arr): Arr {
  const av = a.shape.length === 1,
    bv = b.shape.length === 1;
  const A = av ? { shape: [1, a.shape[0]], data: a.data } : a;
  const B = bv ? { shape: [b.shape[0], 1], data: b.data } : b;
  const [m, k] = A.shape.slice(-2),
    n = B.shape[B.shape.length - 1];
  const ba = A.shape.slice(0, -2),
    bb = B.shape.slice(0, -2);
  const nb = Math.max(ba.length, bb.length);
  const batch = Array.from({ length: nb }, (_, i) => {
    const x = ba[ba.length - nb + i] ?? 1,
      y = bb[bb.length - nb + i] ?? 1;
    return x === 1 ? y : x;
  });
  const count = batch.reduce((p, q) => p * q, 1);
  const pick = (shape: number[], idx: number) => {
    let off = 0,
      mul = 1,
      rest = idx;
    const coords = batch.map(() => 0);
    for (let d = nb - 1; d >= 0; d--) {
      coords[d] = rest % batch[d];
      rest = Math.floor(rest / batch[d]);
    }
    for (let d = shape.length - 1; d >= 0; d--) {
      const c = shape[d] === 1 ? 0 : coords[nb - shape.length + d];
      off += c * mul;
      mul *= shape[d];
    }
    return off;
  };
  const out = new Float64Array(count * m * n);
  for (let i = 0; i < count; i++) {
    const sa = pick(ba, i) * m * k,
      sb = pick(bb, i) * k * n;
    const c = matmul2({ shape: [m, k], data: A.data.subarray(sa, sa + m * k) }, { shape: [k, n], data: B.data.subarray(sb, sb + k * n) });
    out.set(c.data, i * m * n);
  }
  let shape = [...batch, m, n];
  if (av) shape = shape.filter((_, i) => i !== shape.length - 2);
  if (bv) shape = shape.slice(0, -1);
  return arr(shape, out);
}

const TOL = { f32: [1e-4, 1e-4] as [number, number], bf16: [3e-2, 6e-2] as [number, number], f16: [5e-3, 2e-2] as [number, number] };

export const cases: OpCase[] = [
  {
    op: 'matmul',
    inputs: [{ shape: [3, 4] }, { shape: [4, 5] }],
    sized: (n) => [{ shape: [3, n] }, { shape: [n, 2] }],
    run: (a, b) => a.matmul(b),
    reference: matmulRef,
    tol: TOL,
  },
  {
    op: 'matmul',
    label: 'batched with broadcast',
    inputs: [{ shape: [2, 1, 3, 2] }, { shape: [3, 2, 2] }],
    run: (a, b) => a.matmul(b),
    reference: matmulRef,
    tol: TOL,
  },
  {
    op: 'matmul',
    label: 'vector-matrix',
    inputs: [{ shape: [3] }, { shape: [3, 2] }],
    run: (a, b) => a.matmul(b),
    reference: matmulRef,
    tol: TOL,
  },
  {
    op: 'matmul',
    label: 'matrix-vector',
    inputs: [{ shape: [2, 3] }, { shape: [3] }],
    run: (a, b) => a.matmul(b),
    reference: matmulRef,
    tol: TOL,
  },
  {
    op: 'matmul',
    label: 'transposed operands',
    inputs: [{ shape: [4, 3] }, { shape: [5, 4] }],
    sized: (n) => [{ shape: [n, 2] }, { shape: [3, n] }],
    run: (a, b) => a.T.matmul(b.T),
    reference: (a, b) => matmulRef(transpose(a), transpose(b)),
    tol: TOL,
  },
  {
    op: 'matmul',
    label: 'tile edges 67x130 @ 130x129',
    inputs: [{ shape: [67, 130] }, { shape: [130, 129] }],
    run: (a, b) => a.matmul(b),
    reference: matmulRef,
    tol: { f32: [2e-4, 2e-4], bf16: [3e-2, 3e-1], f16: [5e-3, 6e-2] },
  },
  {
    op: 'mm',
    inputs: [{ shape: [2, 3] }, { shape: [3, 4] }],
    sized: (n) => [{ shape: [n, 3] }, { shape: [3, 2] }],
    run: (a, b) => fl.mm(a, b),
    reference: matmulRef,
    tol: TOL,
  },
  {
    op: 'bmm',
    inputs: [{ shape: [2, 2, 3] }, { shape: [2, 3, 2] }],
    sized: (n) => [{ shape: [2, n, 3] }, { shape: [2, 3, 1] }],
    run: (a, b) => fl.bmm(a, b),
    reference: matmulRef,
    tol: TOL,
  },
];

function transpose(x: Arr): Arr {
  const [r, c] = x.shape;
  return arr([c, r], (i) => x.data[(i % r) * c + Math.floor(i / r)]);
}
