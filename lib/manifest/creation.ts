/** Creation ops: `copy_from_host`, `fill`, `arange` and `random` kernel families. */
import type { DType } from '../dtype';
import { ALL, type ArgDecl, FLOATS, NUMERIC, type OpDecl, op } from './types';

const OPTIONS: ArgDecl = { name: 'options', type: 'options', default: {}, rule: 'dtype, device, requiresGrad' };
const SHAPE: ArgDecl = { name: 'shape', type: 'ints', rule: 'non-negative integers' };

function create(name: string, family: string, args: ArgDecl[], dtypes: readonly DType[], shape: string, code?: string): OpDecl {
  return op({
    name,
    family,
    code,
    args: [...args, OPTIONS],
    dtypes: { cpu: dtypes, cuda: dtypes },
    shape,
    grad: { kind: 'none' },
    autocast: 'none',
  });
}

const LIKE: ArgDecl = { name: 'input', type: 'tensor' };
const VALUE: ArgDecl = { name: 'value', type: 'number', rule: 'fits the dtype' };

export const creationOps: OpDecl[] = [
  create(
    'tensor',
    'copy_from_host',
    [{ name: 'data', type: 'options', rule: 'nested arrays or a typed array, rectangular' }],
    ALL,
    "data's shape",
  ),
  create('full', 'fill', [SHAPE, VALUE], ALL, 'shape'),
  create('zeros', 'fill', [SHAPE], ALL, 'shape'),
  create('ones', 'fill', [SHAPE], ALL, 'shape'),
  create('zerosLike', 'fill', [LIKE], ALL, "input's shape"),
  create('onesLike', 'fill', [LIKE], ALL, "input's shape"),
  create('fullLike', 'fill', [LIKE, VALUE], ALL, "input's shape"),
  create(
    'arange',
    'arange',
    [
      { name: 'start', type: 'number' },
      { name: 'end', type: 'number', default: null },
      { name: 'step', type: 'number', default: 1, rule: 'non-zero, towards end' },
    ],
    NUMERIC,
    '[ceil((end - start) / step)]',
  ),
  create(
    'linspace',
    'arange',
    [
      { name: 'start', type: 'number' },
      { name: 'end', type: 'number' },
      { name: 'steps', type: 'int', rule: '>= 0' },
    ],
    NUMERIC,
    '[steps]',
  ),
  create(
    'eye',
    'composite',
    [
      { name: 'n', type: 'int', rule: '>= 0' },
      { name: 'm', type: 'int', default: null, rule: '>= 0' },
    ],
    ALL,
    '[n, m]',
  ),
  create('rand', 'random', [SHAPE], FLOATS, 'shape', 'uniform'),
  create('randn', 'random', [SHAPE], FLOATS, 'shape', 'normal'),
  create(
    'randint',
    'random',
    [{ name: 'low', type: 'int' }, { name: 'high', type: 'int', rule: 'low < high' }, SHAPE],
    NUMERIC,
    'shape',
    'randint',
  ),
  create('bernoulli', 'random', [SHAPE, { name: 'p', type: 'number', rule: '0 <= p <= 1' }], ALL, 'shape', 'bernoulli'),
];
