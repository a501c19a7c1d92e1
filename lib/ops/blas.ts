/**
 * Fused-scale matrix products: addmm (beta·input + alpha·mat1·mat2) and its batched twin baddbmm;
 * their gradients are in lib/ops/grads/blas.ts.
 */
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { noGrad } from '../dispatch/grad_mode';
import { checkOptions, describe } from '../errors';
import { checkTensor, rangeError, shapeStr, typeError } from './util';
import { matmulT } from './linalg';
import { add, mul } from './elementwise';
import { autocastArgs } from '../dispatch/autocast';
import { gradOf } from './grads/table';

/** Scale factors of {@link addmm} and {@link baddbmm} (PyTorch's keyword arguments). */
export interface AddmmOptions {
  /** Multiplies `input` (default 1); 0 ignores its values, NaN and inf included, as in PyTorch. */
  beta?: number;
  /** Multiplies the product (default 1). */
  alpha?: number;
}

function product(op: 'addmm' | 'baddbmm', input: Tensor, a: Tensor, b: Tensor, options: AddmmOptions | undefined): Tensor {
  checkTensor(op, 'input', input);
  checkTensor(op, op === 'addmm' ? 'mat1' : 'batch1', a);
  checkTensor(op, op === 'addmm' ? 'mat2' : 'batch2', b);
  [input, a, b] = autocastArgs(op, input, a, b);
  const { beta = 1, alpha = 1 } = checkOptions<AddmmOptions>(op, options, ['beta', 'alpha']);
  for (const [name, v] of [
    ['beta', beta],
    ['alpha', alpha],
  ] as const)
    if (typeof v !== 'number') throw typeError(op, `${name} must be a number, got ${describe(v)}`);
  const rank = op === 'addmm' ? 2 : 3;
  if (a.ndim !== rank || b.ndim !== rank)
    throw rangeError(op, `expected ${rank}-D operands, got ${shapeStr(a.shape)} and ${shapeStr(b.shape)}`);
  if (a.dtype !== b.dtype || input.dtype !== a.dtype)
    throw typeError(op, `input, and both operands must share a dtype, got ${input.dtype}, ${a.dtype} and ${b.dtype}`, 'ERR_DTYPE');
  const [m, k] = a.shape.slice(-2),
    [k2, n] = b.shape.slice(-2);
  if (k !== k2 || (rank === 3 && a.shape[0] !== b.shape[0]))
    throw rangeError(op, `operand shapes ${shapeStr(a.shape)} and ${shapeStr(b.shape)} cannot be multiplied`);
  const outShape = rank === 3 ? [a.shape[0], m, n] : [m, n];
  const lead = outShape.length - input.ndim;
  if (lead < 0 || input.shape.some((s, i) => s !== 1 && s !== outShape[i + lead]))
    throw rangeError(op, `input of shape ${shapeStr(input.shape)} does not broadcast to the product's shape ${shapeStr(outShape)}`);
  const out = noGrad(() => {
    const p = matmulT(a, b, false, false);
    const scaled = alpha === 1 ? p : mul(p, alpha);
    if (beta === 0) return scaled;
    return add(beta === 1 ? input : mul(input, beta), scaled);
  });
  // The names as literals: test/ops/grad_tables.test.ts finds the ops recorded through the table by them.
  return record(
    out,
    op,
    [input, a, b],
    (g) => (op === 'addmm' ? gradOf('addmm') : gradOf('baddbmm')).grad(g, { input, a, b, alpha, beta }),
    {
      savesOutput: false,
    },
  );
}

/** `beta * input + alpha * (mat1 @ mat2)` for 2-D mat1 [n, m] and mat2 [m, p]; input broadcasts to [n, p]. */
export function addmm(input: Tensor, mat1: Tensor, mat2: Tensor, options?: AddmmOptions): Tensor {
  return product('addmm', input, mat1, mat2, options);
}

/** `beta * input + alpha * (batch1 @ batch2)` for [b, n, m] and [b, m, p]; input broadcasts to [b, n, p]. */
export function baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, options?: AddmmOptions): Tensor {
  return product('baddbmm', input, batch1, batch2, options);
}
