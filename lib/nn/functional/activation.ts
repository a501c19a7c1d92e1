/**
 * The activations of fl.nn.functional: the element-wise ops of lib/ops, with their arguments
 * checked here so that errors name the op the user called (leakyRelu, not the kernel's name).
 */
import type { Tensor } from '../../tensor';
import * as ew from '../../ops/elementwise';
import * as red from '../../ops/reduce';
import { dtypeError } from '../../errors';
import { checkChoice, checkNumber } from '../../validate';
import { tensorArg } from './args';

function input(op: string, x: unknown): Tensor {
  const t = tensorArg(op, 'input', x);
  if (t.dtype === 'bool') throw dtypeError(op, "input must be a numeric tensor, got bool — use input.to('f32')");
  return t;
}

export const relu = (x: Tensor): Tensor => ew.relu(input('relu', x));
export const silu = (x: Tensor): Tensor => ew.silu(input('silu', x));
export const tanh = (x: Tensor): Tensor => ew.tanh(input('tanh', x));
export const sigmoid = (x: Tensor): Tensor => ew.sigmoid(input('sigmoid', x));

export function leakyRelu(x: Tensor, negativeSlope = 0.01): Tensor {
  return ew.leakyRelu(input('leakyRelu', x), checkNumber('leakyRelu', 'negativeSlope', negativeSlope));
}

export function gelu(x: Tensor, approximate: 'none' | 'tanh' = 'none'): Tensor {
  return ew.gelu(input('gelu', x), checkChoice('gelu', 'approximate', approximate, ['none', 'tanh'] as const));
}

export function softmax(x: Tensor, dim = -1): Tensor {
  return red.softmax(input('softmax', x), checkNumber('softmax', 'dim', dim, { integer: true }));
}

export function logSoftmax(x: Tensor, dim = -1): Tensor {
  return red.logSoftmax(input('logSoftmax', x), checkNumber('logSoftmax', 'dim', dim, { integer: true }));
}
