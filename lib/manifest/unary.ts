/** Element-wise unary ops: one kernel family (`unary`, derivative `unary_backward`), one code each. */
import { type AutocastPolicy, FLOATS, NUMERIC, type OpDecl, op } from './types';

const X = [{ name: 'input', type: 'tensor' as const }];

/** A unary op: floats only (integer inputs are promoted to f32) unless `ints`. */
function unary(
  name: string,
  code: string,
  o: { ints?: boolean; autocast?: AutocastPolicy; args?: OpDecl['args']; codes?: OpDecl['codes'] } = {},
): OpDecl {
  const dtypes = o.ints ? NUMERIC : FLOATS;
  return op({
    name,
    family: 'unary',
    code,
    args: [...X, ...(o.args ?? [])],
    dtypes: { cpu: dtypes, cuda: dtypes },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: o.autocast ?? 'none',
    method: true,
    codes: o.codes,
  });
}

export const unaryOps: OpDecl[] = [
  unary('neg', 'neg', { ints: true }),
  unary('exp', 'exp', { autocast: 'f32' }),
  unary('log', 'log', { autocast: 'f32' }),
  unary('sqrt', 'sqrt'),
  unary('rsqrt', 'rsqrt', { autocast: 'f32' }),
  unary('abs', 'abs', { ints: true }),
  unary('sign', 'sign', { ints: true }),
  unary('tanh', 'tanh'),
  unary('sigmoid', 'sigmoid'),
  unary('relu', 'relu', { ints: true }),
  unary('gelu', 'gelu', {
    args: [{ name: 'approximate', type: 'string', default: 'none', rule: "'none' or 'tanh'" }],
    codes: { unary: ['gelu_tanh'] },
  }),
  unary('silu', 'silu'),
  unary('clamp', 'clamp', {
    ints: true,
    args: [
      { name: 'min', type: 'tensor|number', default: null, rule: 'a number (not NaN), a tensor that broadcasts, or null' },
      { name: 'max', type: 'tensor|number', default: null, rule: 'a number (not NaN), a tensor that broadcasts, or null' },
    ],
  }),
  { ...unary('leakyRelu', 'leaky_relu', { args: [{ name: 'negativeSlope', type: 'number', default: 0.01 }] }), method: false },
  unary('square', 'square', { ints: true }),
  { ...unary('reciprocal', 'reciprocal', { autocast: 'f32' }), method: false },
  { ...unary('sin', 'sin'), method: false },
  { ...unary('cos', 'cos'), method: false },
  { ...unary('erf', 'erf'), method: false },
  { ...unary('floor', 'floor'), method: false },
  { ...unary('ceil', 'ceil'), method: false },
  { ...unary('round', 'round'), method: false },
  { ...unary('log1p', 'log1p', { autocast: 'f32' }), method: false },
  { ...unary('expm1', 'expm1', { autocast: 'f32' }), method: false },
  {
    ...unary('atan', 'atan'),
    doc: 'The arctangent of each element, in radians in (-pi/2, pi/2) (integer inputs give f32), as torch.atan.',
    reference: Math.atan,
  },
  {
    ...unary('log2', 'log2', { autocast: 'f32' }),
    doc: 'The base-2 logarithm of each element (integer inputs give f32), as torch.log2.',
    reference: Math.log2,
    domain: [0.3, 3],
  },
];
