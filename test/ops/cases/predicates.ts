/** Cases for isnan/isinf/isfinite, isclose and allclose (lib/manifest/predicates.ts). */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { map, zip } from './ref';

const SPECIAL = [1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, -2.5];
const FLOATS = ['f32', 'f64', 'bf16', 'f16'] as const;
const INTS = ['i32', 'i64', 'u8', 'bool'] as const;

function test(op: 'isnan' | 'isinf' | 'isfinite', f: (v: number) => boolean): OpCase[] {
  const run = (x: fl.Tensor) => (op === 'isnan' ? x.isnan() : op === 'isinf' ? x.isinf() : x.isfinite());
  return [
    {
      op,
      label: 'NaN and infinities',
      inputs: [{ shape: [2, 3], values: SPECIAL }],
      run,
      reference: (x) => map(x, (v) => (f(v) ? 1 : 0)),
      dtypes: [...FLOATS],
      exact: true,
      grad: false,
    },
    {
      op,
      label: 'random, and integer inputs',
      inputs: [{ shape: [3, 4] }],
      sized: (n) => [{ shape: [n] }],
      run,
      reference: (x) => map(x, (v) => (f(v) ? 1 : 0)),
      dtypes: [...FLOATS, ...INTS],
      exact: true,
      grad: false,
    },
  ];
}

const closeRef = (a: Arr, b: Arr, rtol: number, atol: number, equalNan: boolean) =>
  zip(a, b, (x, y) => {
    if (x === y) return 1;
    if (Number.isNaN(x) && Number.isNaN(y)) return equalNan ? 1 : 0;
    const err = Math.abs(x - y);
    return Number.isFinite(err) && err <= atol + rtol * Math.abs(y) ? 1 : 0;
  });

export const cases: OpCase[] = [
  ...test('isnan', Number.isNaN),
  ...test('isinf', (v) => v === Number.POSITIVE_INFINITY || v === Number.NEGATIVE_INFINITY),
  ...test('isfinite', Number.isFinite),
  {
    op: 'isclose',
    label: 'rtol 0.1, atol 0.05, broadcast',
    inputs: [{ shape: [3, 4] }, { shape: [4] }],
    run: (a, b) => fl.isclose(a, b.to(a.dtype), { rtol: 0.1, atol: 0.05 }),
    reference: (a, b) => closeRef(a, b, 0.1, 0.05, false),
    dtypes: ['f32', 'f64'],
    exact: true,
    grad: false,
  },
  {
    op: 'isclose',
    label: 'equalNan',
    inputs: [
      { shape: [4], values: [1, Number.NaN, Number.POSITIVE_INFINITY, 2] },
      { shape: [4], values: [1.000001, Number.NaN, Number.POSITIVE_INFINITY, 2.1] },
    ],
    run: (a, b) => fl.isclose(a, b, { equalNan: true }),
    reference: (a, b) => closeRef(a, b, 1e-5, 1e-8, true),
    dtypes: ['f32', 'f64'],
    exact: true,
    grad: false,
  },
  {
    op: 'allclose',
    inputs: [{ shape: [3, 4] }],
    run: (a) => fl.tensor([fl.allclose(a, a.add(1e-9)) ? 1 : 0, fl.allclose(a, a.add(1)) ? 1 : 0], { dtype: 'f64', device: a.device }),
    reference: () => ({ shape: [2], data: Float64Array.from([1, 0]) }),
    dtypes: ['f32', 'f64'],
    exact: true,
    grad: false,
  },
];
