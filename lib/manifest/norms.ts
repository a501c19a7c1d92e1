/** norm: vector p-norms built from abs/pow/sum/max, with PyTorch's (sub)gradient as a formula. */
import { FLOATS, type OpDecl, op } from './types';

export const normOps: OpDecl[] = [
  op({
    name: 'norm',
    family: 'composite',
    args: [
      { name: 'input', type: 'tensor', rule: 'floating' },
      { name: 'p', type: 'number', default: 'fro', rule: "any number (inf, -inf, 0 included) or 'fro' over at most 2 dims" },
      { name: 'dim', type: 'int|ints', default: null, rule: 'distinct dims; all dims when left out' },
      { name: 'keepdim', type: 'bool', default: false },
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape: 'reduce',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'f32',
    method: true,
  }),
];
