/** Cases for clone, to and copy_ (lib/manifest/copy.ts). */
import * as fl from '../../../lib/index';
import type { Tensor } from '../../../lib/index';
import type { OpCase } from '../harness/types';
import { map } from './ref';

const same = (x: { shape: number[]; data: Float64Array }) => map(x, (v) => v);

export const cases: OpCase[] = [
  {
    op: 'clone',
    inputs: [{ shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }],
    dtypes: ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64', 'u8', 'bool'],
    run: (x) => x.clone(),
    reference: same,
  },
  {
    op: 'to',
    label: 'i64 -> the case dtype',
    // The second input is an empty probe in the case's dtype: the cast's target. Integers in
    // [0, 100) are exact in every dtype.
    inputs: [{ shape: [3, 4], kind: 'int', low: 0, high: 100 }, { shape: [0] }],
    sized: (n) => [{ shape: [n], kind: 'int', low: 0, high: 100 }, { shape: [0] }],
    dtypes: ['f32', 'f64', 'bf16', 'f16', 'i32', 'u8'],
    run: (x, probe) => x.to(probe.dtype),
    reference: same,
    exact: true,
    grad: false,
  },
  {
    op: 'to',
    label: 'dtype -> f64 and back',
    inputs: [{ shape: [3, 4], low: -100, high: 100 }],
    sized: (n) => [{ shape: [n], low: -100, high: 100 }],
    dtypes: ['f32', 'bf16', 'f16', 'i32', 'i64', 'u8'],
    run: (x) => x.to('f64').to(x.dtype),
    reference: same,
    exact: true,
  },
  {
    op: 'to',
    label: 'to the device it is on',
    inputs: [{ shape: [2, 3] }],
    run: (x) => x.to(x.device).mul(2),
    reference: (x) => map(x, (v) => 2 * v),
  },
  {
    op: 'copy_',
    inputs: [{ shape: [3, 4] }, { shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }, { shape: [n] }],
    dtypes: ['f32', 'f64', 'bf16', 'i64', 'bool'],
    run: (dst: Tensor, src: Tensor) => {
      const d = dst.clone();
      return fl.noGrad(() => d.copy_(src));
    },
    reference: (_d, s) => same(s),
    grad: false,
  },
];
