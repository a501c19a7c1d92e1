/** isnan/isinf/isfinite (codes of the `unary` family, bool out) and isclose/allclose (composite). */
import { ALL, type ArgDecl, type OpDecl, op } from './types';

const X: ArgDecl = { name: 'input', type: 'tensor' };
const CLOSE: ArgDecl[] = [
  X,
  { name: 'other', type: 'tensor', rule: "input's dtype; broadcasts" },
  { name: 'options', type: 'options', default: {}, rule: 'rtol >= 0 (1e-5), atol >= 0 (1e-8), equalNan (false)' },
];

const test = (name: 'isnan' | 'isinf' | 'isfinite', doc: string): OpDecl =>
  op({
    name,
    doc,
    family: 'unary',
    code: name,
    args: [X],
    // Integer and bool inputs are answered without a kernel (never NaN or infinite).
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    output: 'bool',
    grad: { kind: 'none' },
    autocast: 'none',
    method: true,
  });

export const predicateOps: OpDecl[] = [
  test('isnan', 'True where the value is NaN (never for integer or bool tensors).'),
  test('isinf', 'True where the value is +inf or -inf (never for integer or bool tensors).'),
  test('isfinite', 'True where the value is neither NaN nor infinite (always for integer or bool tensors).'),
  op({
    name: 'isclose',
    family: 'composite',
    args: CLOSE,
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'broadcast',
    output: 'bool',
    grad: { kind: 'none' },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'allclose',
    family: 'composite',
    args: CLOSE,
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'a JS boolean (a sync point)',
    grad: { kind: 'none' },
    autocast: 'none',
    method: true,
  }),
];
