/** Cases for the element-wise unary ops (lib/manifest/unary.ts). */
import * as fl from '../../../lib/index';
import type { Tensor } from '../../../lib/index';
import type { InputSpec, OpCase } from '../harness/types';
import { erf, gelu, geluTanh, map, roundEven, sigmoid, silu } from './ref';

/** A unary case on a [3, 4] input, swept over [n]; `low`/`high` keep inputs in the op's domain. */
function unary(
  op: string,
  run: (x: Tensor) => Tensor,
  f: (v: number) => number,
  o: Partial<OpCase> & { low?: number; high?: number } = {},
): OpCase {
  const { low, high, ...rest } = o;
  const spec = (shape: number[]): InputSpec[] => [{ shape, low, high }];
  return { op, inputs: spec([3, 4]), sized: (n) => spec([n]), run, reference: (x) => map(x, f), ...rest };
}

const POS = { low: 0.3, high: 3 };
const INTS: Partial<OpCase> & { low: number; high: number } = {
  label: 'integers',
  dtypes: ['i32', 'i64'],
  low: -50,
  high: 50,
  grad: false,
};

export const cases: OpCase[] = [
  unary(
    'neg',
    (x) => x.neg(),
    (v) => -v,
  ),
  unary(
    'neg',
    (x) => x.neg(),
    (v) => -v,
    INTS,
  ),
  unary('exp', (x) => x.exp(), Math.exp),
  unary('log', (x) => x.log(), Math.log, POS),
  unary('sqrt', (x) => x.sqrt(), Math.sqrt, POS),
  unary(
    'rsqrt',
    (x) => x.rsqrt(),
    (v) => 1 / Math.sqrt(v),
    POS,
  ),
  unary('abs', (x) => x.abs(), Math.abs),
  unary('abs', (x) => x.abs(), Math.abs, INTS),
  unary('sign', (x) => x.sign(), Math.sign),
  unary('tanh', (x) => x.tanh(), Math.tanh),
  unary('sigmoid', (x) => x.sigmoid(), sigmoid),
  unary(
    'relu',
    (x) => x.relu(),
    (v) => Math.max(v, 0),
  ),
  unary(
    'relu',
    (x) => x.relu(),
    (v) => Math.max(v, 0),
    INTS,
  ),
  unary('gelu', (x) => x.gelu(), gelu),
  unary('gelu', (x) => x.gelu('tanh'), geluTanh, { label: "approximate 'tanh'" }),
  unary('silu', (x) => x.silu(), silu),
  unary(
    'clamp',
    (x) => x.clamp(-0.5, 0.75),
    (v) => Math.min(Math.max(v, -0.5), 0.75),
  ),
  unary(
    'clamp',
    (x) => x.clamp(null, 0.5),
    (v) => Math.min(v, 0.5),
    { label: 'max only' },
  ),
  unary(
    'clamp',
    (x) => x.clamp(-3, 7),
    (v) => Math.min(Math.max(v, -3), 7),
    { ...INTS, low: -20, high: 20 },
  ),
  unary(
    'leakyRelu',
    (x) => fl.leakyRelu(x, 0.1),
    (v) => (v > 0 ? v : 0.1 * v),
  ),
  unary(
    'square',
    (x) => x.square(),
    (v) => v * v,
  ),
  unary(
    'reciprocal',
    (x) => fl.reciprocal(x),
    (v) => 1 / v,
    POS,
  ),
  unary('sin', (x) => fl.sin(x), Math.sin),
  unary('cos', (x) => fl.cos(x), Math.cos),
  unary('erf', (x) => fl.erf(x), erf),
  unary('floor', (x) => fl.floor(x), Math.floor, { low: -5, high: 5 }),
  unary('ceil', (x) => fl.ceil(x), Math.ceil, { low: -5, high: 5 }),
  unary('round', (x) => fl.round(x), roundEven, { low: -5, high: 5 }),
  unary('round', (x) => fl.round(x), roundEven, {
    label: 'halves to even',
    inputs: [{ shape: [8], values: [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49] }],
    sized: undefined,
    grad: false,
  }),
  unary('log1p', (x) => fl.log1p(x), Math.log1p, { low: -0.5, high: 3 }),
  unary('expm1', (x) => fl.expm1(x), Math.expm1),
];
