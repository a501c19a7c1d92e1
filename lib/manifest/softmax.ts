/** Softmax and log-softmax along one dim: the `softmax` kernel family. */
import { FLOATS, type OpDecl, op } from './types';

function softmax(name: string): OpDecl {
  return op({
    name,
    family: 'softmax',
    args: [
      { name: 'input', type: 'tensor' },
      { name: 'dim', type: 'int', default: -1, rule: '-ndim <= dim < ndim' },
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'f32',
    method: true,
  });
}

export const softmaxOps: OpDecl[] = [softmax('softmax'), softmax('logSoftmax')];
