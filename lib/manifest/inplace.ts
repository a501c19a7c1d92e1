/**
 * In-place Tensor methods (lib/ops/inplace.ts): the out-of-place op, then a copy into self's
 * storage; the gradient is the out-of-place op's, recorded on self's rebased history.
 */
import { ALL, FLOATS, NUMERIC, type ArgDecl, type GradDecl, type OpDecl, op } from './types';
import type { DType } from '../dtype';

const SELF: ArgDecl = { name: 'self', type: 'tensor', rule: 'not a leaf that requires grad outside noGrad; not a view while recorded' };

function inPlace(name: string, args: ArgDecl[], dtypes: readonly DType[], grad: GradDecl): OpDecl {
  return op({
    name,
    family: 'composite',
    args: [SELF, ...args],
    dtypes: { cpu: dtypes, cuda: dtypes },
    shape: "self's (other broadcasts into it; the result type must cast to self's)",
    grad,
    autocast: 'none',
    method: true,
  });
}

const OTHER: ArgDecl = { name: 'other', type: 'tensor|number', rule: "broadcasts to self's shape" };
const ALPHA: ArgDecl = { name: 'alpha', type: 'number', default: 1 };
const COMPOSITE: GradDecl = { kind: 'composite' };

export const inPlaceOps: OpDecl[] = [
  inPlace('add_', [OTHER, ALPHA], NUMERIC, COMPOSITE),
  inPlace('sub_', [OTHER, ALPHA], NUMERIC, COMPOSITE),
  inPlace('mul_', [OTHER], NUMERIC, COMPOSITE),
  inPlace('div_', [OTHER], FLOATS, COMPOSITE),
  inPlace(
    'clamp_',
    [
      { name: 'min', type: 'tensor|number', default: null },
      { name: 'max', type: 'tensor|number', default: null },
    ],
    NUMERIC,
    COMPOSITE,
  ),
  inPlace('fill_', [{ name: 'value', type: 'tensor|number', rule: 'a number, or a 0-d tensor' }], ALL, {
    kind: 'formula',
    inputs: ['value'],
  }),
  inPlace('zero_', [], ALL, { kind: 'none' }),
  inPlace(
    'uniform_',
    [
      { name: 'from', type: 'number', default: 0 },
      { name: 'to', type: 'number', default: 1, rule: 'from <= to' },
    ],
    FLOATS,
    { kind: 'none' },
  ),
  inPlace(
    'normal_',
    [
      { name: 'mean', type: 'number', default: 0 },
      { name: 'std', type: 'number', default: 1, rule: '>= 0' },
    ],
    FLOATS,
    { kind: 'none' },
  ),
];
