/** randLike/randnLike (random kernel): samples with the input's shape, dtype and device (zerosLike & co are in creation.ts). */
import type { DType } from '../dtype';
import { FLOATS, type ArgDecl, type OpDecl, op } from './types';

const LIKE: ArgDecl = { name: 'input', type: 'tensor' };
const OPTIONS: ArgDecl = { name: 'options', type: 'options', default: {}, rule: 'dtype, device, requiresGrad (floating only)' };

function like(name: string, family: string, dtypes: readonly DType[], args: ArgDecl[], code?: string): OpDecl {
  return op({
    name,
    family,
    code,
    args: [LIKE, ...args, OPTIONS],
    dtypes: { cpu: dtypes, cuda: dtypes },
    shape: "input's",
    grad: { kind: 'none' },
    autocast: 'none',
  });
}

export const likeOps: OpDecl[] = [like('randLike', 'random', FLOATS, [], 'uniform'), like('randnLike', 'random', FLOATS, [], 'normal')];
