/** tril/triu: the `triangular` kernel family (cpp/cpu/triangular.cc, cuda/triangular.cu). */
import { ALL, type OpDecl, op } from './types';

const tri = (name: 'tril' | 'triu'): OpDecl =>
  op({
    name,
    family: 'triangular',
    args: [
      { name: 'input', type: 'tensor', rule: 'at least 2 dims' },
      { name: 'diagonal', type: 'int', default: 0 },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  });

export const triangularOps: OpDecl[] = [tri('tril'), tri('triu')];
