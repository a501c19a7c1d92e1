/** Matrix products: the `matmul` kernel family (batched GEMM with broadcasting). */
import { FLOATS, type OpDecl, op } from './types';

function mm(name: string, shape: string, rule: string, method = false): OpDecl {
  return op({
    name,
    family: 'matmul',
    args: [
      { name: 'input', type: 'tensor', rule },
      { name: 'other', type: 'tensor', rule: "input's dtype; inner sizes agree" },
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape,
    grad: { kind: 'formula', inputs: ['input', 'other'] },
    autocast: 'lower',
    method,
  });
}

export const linalgOps: OpDecl[] = [
  mm('matmul', '[..., n, m] @ [..., m, p] -> [..., n, p], batch dims broadcast', '1-d or more', true),
  mm('mm', '[n, m] @ [m, p] -> [n, p]', '2-d'),
  mm('bmm', '[b, n, m] @ [b, m, p] -> [b, n, p]', '3-d'),
];
