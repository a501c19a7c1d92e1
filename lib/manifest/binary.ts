/** Element-wise binary ops with NumPy broadcasting: one kernel family (`binary`), one code each. */
import { ALL, FLOATS, NUMERIC, type OpDecl, op } from './types';

const AB = [
  { name: 'input', type: 'tensor' as const },
  { name: 'other', type: 'tensor|number' as const, rule: 'broadcastable with input' },
];

function arith(name: string, code: string, extra: Partial<OpDecl> = {}): OpDecl {
  return op({
    name,
    family: 'binary',
    code,
    args: AB,
    dtypes: { cpu: NUMERIC, cuda: NUMERIC },
    shape: 'broadcast',
    grad: { kind: 'formula', inputs: ['input', 'other'] },
    // Mixed float operands already meet in the widest dtype (the kernels promote), as autocast asks.
    autocast: 'promote',
    method: true,
    ...extra,
  });
}

function compare(name: string, code: string, method = true, custom?: boolean): OpDecl {
  return op({
    name,
    family: 'binary',
    code,
    args: AB,
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'broadcast',
    grad: { kind: 'none' },
    autocast: 'none',
    method,
    output: 'bool',
    custom,
  });
}

const alpha = { name: 'alpha', type: 'number' as const, default: 1 };

export const binaryOps: OpDecl[] = [
  arith('add', 'add', { args: [...AB, alpha] }),
  arith('sub', 'sub', { args: [...AB, alpha] }),
  // Written by hand (lib/ops/elementwise.ts): the other ops' gradients are built from them.
  arith('mul', 'mul', { custom: true }),
  // Integer inputs divide as f32 (true division, as torch.div).
  arith('div', 'div', { dtypes: { cpu: FLOATS, cuda: FLOATS }, custom: true }),
  // A number exponent runs the unary pow_scalar kernel.
  arith('pow', 'pow', { dtypes: { cpu: FLOATS, cuda: FLOATS }, autocast: 'f32', codes: { unary: ['pow_scalar'] } }),
  // Written by hand: clamp with tensor bounds is built from them.
  arith('maximum', 'maximum', { custom: true }),
  arith('minimum', 'minimum', { custom: true }),
  arith('hypot', 'hypot', {
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    doc: 'sqrt(input^2 + other^2) with broadcasting, without overflow or underflow in between (integer inputs give f32), as torch.hypot.',
    reference: Math.hypot,
  }),
  compare('eq', 'eq'),
  compare('ne', 'ne'),
  compare('lt', 'lt'),
  compare('le', 'le'),
  compare('gt', 'gt'),
  compare('ge', 'ge'),
  // Written by hand: both operands are tensors, cast to bool.
  compare('logicalAnd', 'logical_and', false, true),
  compare('logicalOr', 'logical_or', false, true),
  // Built as eq(bool(input), false).
  op({
    name: 'logicalNot',
    family: 'binary',
    code: 'eq',
    args: [{ name: 'input', type: 'tensor' }],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'none' },
    autocast: 'none',
    output: 'bool',
  }),
];
