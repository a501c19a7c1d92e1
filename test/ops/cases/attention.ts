/** Conformance cases of fused attention against a plain f64 softmax(q·kᵀ·scale)·v. */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';

const OP = 'nn.functional.scaledDotProductAttention';

/** q [b, tq, d], k [b, tk, d], v [b, tk, dv] (leading dims folded), optional causal cut. */
function reference(causal: boolean) {
  return (q: Arr, k: Arr, v: Arr): Arr => {
    const n = q.shape.length;
    const [tq, d] = q.shape.slice(n - 2);
    const tk = k.shape[n - 2];
    const dv = v.shape[n - 1];
    const b = q.data.length / (tq * d);
    const out = new Float64Array(b * tq * dv);
    const s = new Float64Array(tk);
    for (let bi = 0; bi < b; bi++)
      for (let i = 0; i < tq; i++) {
        let mx = -Infinity;
        for (let j = 0; j < tk; j++) {
          let acc = 0;
          for (let x = 0; x < d; x++) acc += q.data[(bi * tq + i) * d + x] * k.data[(bi * tk + j) * d + x];
          s[j] = causal && j > i ? -Infinity : acc / Math.sqrt(d);
          mx = Math.max(mx, s[j]);
        }
        let sum = 0;
        for (let j = 0; j < tk; j++) sum += Math.exp(s[j] - mx);
        for (let j = 0; j < tk; j++) {
          const p = Math.exp(s[j] - mx) / sum;
          for (let x = 0; x < dv; x++) out[(bi * tq + i) * dv + x] += p * v.data[(bi * tk + j) * dv + x];
        }
      }
    return { shape: [...q.shape.slice(0, n - 1), dv], data: out };
  };
}

const sized = (n: number) => [{ shape: [2, n, 4] }, { shape: [2, n, 4] }, { shape: [2, n, 3] }];

export const cases: OpCase[] = [
  {
    op: OP,
    inputs: [{ shape: [2, 3, 7, 8] }, { shape: [2, 3, 9, 8] }, { shape: [2, 3, 9, 5] }],
    sized,
    run: (q, k, v) => fl.nn.functional.scaledDotProductAttention(q, k, v),
    reference: reference(false),
    nonContiguous: false,
    tol: { bf16: [3e-2, 3e-2], f16: [5e-3, 5e-3] },
  },
  {
    op: OP,
    label: 'isCausal',
    inputs: [{ shape: [2, 2, 129, 8] }, { shape: [2, 2, 129, 8] }, { shape: [2, 2, 129, 8] }],
    sized,
    run: (q, k, v) => fl.nn.functional.scaledDotProductAttention(q, k, v, { isCausal: true }),
    reference: reference(true),
    nonContiguous: false,
    tol: { bf16: [3e-2, 3e-2], f16: [5e-3, 5e-3] },
  },
];
