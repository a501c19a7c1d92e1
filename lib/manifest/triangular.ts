/** tril/triu: the `triangular` kernel family (cpp/cpu/triangular.cc, cuda/triangular.cu); glue generated (`kernel`). */
import { ALL, type OpDecl, op } from './types';

const tri = (name: 'tril' | 'triu'): OpDecl =>
  op({
    name,
    family: 'triangular',
    args: [
      { name: 'input', type: 'tensor', rule: 'at least 2 dims', check: { minDims: 2 } },
      { name: 'diagonal', type: 'int', default: 0 },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
    kernel: { fixed: { upper: name === 'triu' } },
    doc:
      name === 'tril'
        ? 'The lower triangle of the last two dims: elements with `col - row <= diagonal`, zero elsewhere (torch.tril).'
        : 'The upper triangle of the last two dims: elements with `col - row >= diagonal`, zero elsewhere (torch.triu).',
  });

export const triangularOps: OpDecl[] = [tri('tril'), tri('triu')];
