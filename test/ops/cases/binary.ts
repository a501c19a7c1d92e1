/** Cases for the element-wise binary ops (lib/manifest/binary.ts): broadcasting, scalars, integers. */
import * as fl from '../../../lib/index';
import type { Tensor } from '../../../lib/index';
import type { Arr, InputSpec, OpCase } from '../harness/types';
import { map, zip } from './ref';

type F = (a: number, b: number) => number;

/** A binary case: [3, 4] with a broadcast [4] operand, swept over [n] with [1]. */
function binary(
  op: string,
  run: (a: Tensor, b: Tensor) => Tensor,
  f: F,
  o: Partial<OpCase> & { a?: Partial<InputSpec>; b?: Partial<InputSpec> } = {},
): OpCase {
  const { a, b, ...rest } = o;
  return {
    op,
    inputs: [
      { shape: [3, 4], ...a },
      { shape: [4], ...b },
    ],
    sized: (n) => [
      { shape: [n], ...a },
      { shape: [1], ...b },
    ],
    run,
    reference: (x, y) => zip(x, y, f),
    ...rest,
  };
}

const b = (x: boolean): number => (x ? 1 : 0);
const INTS: Partial<OpCase> = { label: 'integers', dtypes: ['i32', 'i64'], grad: false };
const intIn = { a: { low: -20, high: 20 }, b: { low: -20, high: 20 } };

function compare(op: string, run: (a: Tensor, b: Tensor) => Tensor, f: F): OpCase[] {
  // Equal pairs on purpose, so equality is exercised; random values at the odd sizes.
  const ties = { a: { values: [-1, 0, 1, 2, 0.5, 0.5, -2, 3, 1, 1, 1, 1] }, b: { values: [1, 0, 1, 2] } };
  return [
    { ...binary(op, run, f, ties), sized: (n) => [{ shape: [n] }, { shape: [1] }] },
    binary(op, run, f, { ...INTS, a: { low: -3, high: 3 }, b: { low: -3, high: 3 } }),
    {
      op,
      label: 'against a number',
      inputs: [{ shape: [2, 5] }],
      run: (x) => run(x, 0.5 as unknown as Tensor),
      reference: (x: Arr) => map(x, (v) => f(v, 0.5)),
    },
  ];
}

const maxOf = (x: number, y: number) => (Number.isNaN(x) || Number.isNaN(y) ? NaN : Math.max(x, y));
const minOf = (x: number, y: number) => (Number.isNaN(x) || Number.isNaN(y) ? NaN : Math.min(x, y));

export const cases: OpCase[] = [
  binary(
    'add',
    (x, y) => x.add(y),
    (p, q) => p + q,
  ),
  binary(
    'add',
    (x, y) => x.add(y, 2.5),
    (p, q) => p + 2.5 * q,
    { label: 'alpha 2.5' },
  ),
  binary(
    'add',
    (x, y) => x.add(y),
    (p, q) => p + q,
    { ...INTS, ...intIn },
  ),
  { op: 'add', label: 'a number', inputs: [{ shape: [2, 3] }], run: (x) => x.add(3), reference: (x) => map(x, (v) => v + 3) },
  binary(
    'sub',
    (x, y) => x.sub(y),
    (p, q) => p - q,
  ),
  binary(
    'sub',
    (x, y) => x.sub(y, 0.5),
    (p, q) => p - 0.5 * q,
    { label: 'alpha 0.5' },
  ),
  binary(
    'sub',
    (x, y) => x.sub(y),
    (p, q) => p - q,
    { ...INTS, ...intIn },
  ),
  binary(
    'mul',
    (x, y) => x.mul(y),
    (p, q) => p * q,
  ),
  binary(
    'mul',
    (x, y) => x.mul(y),
    (p, q) => p * q,
    { ...INTS, ...intIn },
  ),
  binary(
    'div',
    (x, y) => x.div(y),
    (p, q) => p / q,
    { b: { low: 0.5, high: 2 } },
  ),
  binary(
    'pow',
    (x, y) => x.pow(y),
    (p, q) => p ** q,
    { a: { low: 0.5, high: 2 } },
  ),
  {
    op: 'pow',
    label: 'a number exponent',
    inputs: [{ shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }],
    run: (x) => x.pow(3),
    reference: (x) => map(x, (v) => v ** 3),
  },
  binary('maximum', (x, y) => x.maximum(y), maxOf),
  binary('maximum', (x, y) => x.maximum(y), maxOf, { ...INTS, ...intIn }),
  binary('minimum', (x, y) => x.minimum(y), minOf),
  ...compare(
    'eq',
    (x, y) => x.eq(y),
    (p, q) => b(p === q),
  ),
  ...compare(
    'ne',
    (x, y) => x.ne(y),
    (p, q) => b(p !== q),
  ),
  ...compare(
    'lt',
    (x, y) => x.lt(y),
    (p, q) => b(p < q),
  ),
  ...compare(
    'le',
    (x, y) => x.le(y),
    (p, q) => b(p <= q),
  ),
  ...compare(
    'gt',
    (x, y) => x.gt(y),
    (p, q) => b(p > q),
  ),
  ...compare(
    'ge',
    (x, y) => x.ge(y),
    (p, q) => b(p >= q),
  ),
  binary(
    'logicalAnd',
    (x, y) => fl.logicalAnd(x, y),
    (p, q) => b(p !== 0 && q !== 0),
    {
      dtypes: ['bool', 'f32'],
      a: { low: -1, high: 1 },
      b: { low: -1, high: 1 },
    },
  ),
  binary(
    'logicalOr',
    (x, y) => fl.logicalOr(x, y),
    (p, q) => b(p !== 0 || q !== 0),
    { dtypes: ['bool', 'i32'], a: { low: 0, high: 2 }, b: { low: 0, high: 2 } },
  ),
  {
    op: 'logicalNot',
    inputs: [{ shape: [3, 4], kind: 'i32', low: -1, high: 2 }],
    sized: (n) => [{ shape: [n], kind: 'bool' }],
    dtypes: ['f32'],
    run: (x) => fl.logicalNot(x),
    reference: (x) => map(x, (v) => b(v === 0)),
  },
];
