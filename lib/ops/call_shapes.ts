/**
 * The uniform calls of the element-wise kernel families: what every op of one call shape does.
 * The wrappers that scripts/gen_ops.ts generates from the op manifest (lib/ops/generated/) are one
 * call each to these; hand-written ops with their own logic (gelu, clamp, pow, ...) use them too.
 * `name` is the user's op (errors and the autograd node name it), `code` the kernel's op code.
 */
import { native } from '../native';
import type { BinaryOpName, UnaryOpName } from '../../types/native';
import { binaryOpNames, unaryOpNames } from '../../types/op_codes';
import type { Tensor, TensorLike } from '../tensor';
import { record, recording } from '../dispatch/record';
import { isFloating } from '../dtype';
import { castTo, checkTensor, operands, sumTo, wrap } from './util';

// Op codes go to the addon as their index in the native enum: no string to convert per call.
export const indexOf = <T extends string>(names: readonly T[]): Map<T, number> => new Map(names.map((n, i) => [n, i]));
const BINARY = indexOf(binaryOpNames);
const UNARY = indexOf(unaryOpNames);

/** The binary kernel on two tensors of one dtype (broadcasting). */
export function binaryKernel(code: BinaryOpName, a: Tensor, b: Tensor): Tensor {
  return wrap(native.binary(BINARY.get(code) ?? code, a.handle, b.handle));
}

/**
 * A binary op's gradient function: given the upstream gradient, the operands and the output, each
 * operand's gradient at the broadcast shape (or null). Taking them as arguments rather than
 * capturing them lets an op pass one function made once, so nothing is allocated when not recording.
 */
export type BinaryGrad = (g: Tensor, a: Tensor, b: Tensor, out: Tensor) => [Tensor | null, Tensor | null];

/** Records a binary op: each input's gradient from `grads`, summed back to its shape through broadcasting. */
export function recordBinary(out: Tensor, name: string, a: Tensor, b: Tensor, grads: BinaryGrad, savesOutput = false): Tensor {
  if (!recording(a, b)) return out;
  return record(
    out,
    name,
    [a, b],
    (g) => {
      const [ga, gb] = grads(g, a, b, out);
      return [ga && a.requiresGrad ? sumTo(ga, a.shape) : null, gb && b.requiresGrad ? sumTo(gb, b.shape) : null];
    },
    { savesOutput },
  );
}

/**
 * A binary op's gradient (lib/ops/grads/binary.ts): given the upstream gradient, the promoted
 * operands and the output, each operand's gradient at the broadcast shape, or null for an operand
 * that does not require grad. `savesOutput` says whether it reads `out`.
 */
export interface BinaryFormula {
  readonly savesOutput: boolean;
  grad(g: Tensor, a: Tensor, b: Tensor, out: Tensor): [Tensor | null, Tensor | null];
}

/**
 * A binary arithmetic op: operands promoted to one dtype (to f32 first when `floats` and they are
 * integers, as true division), broadcast, and recorded with its formula.
 */
export function binaryOp(name: string, code: BinaryOpName, x: Tensor, other: TensorLike, formula: BinaryFormula, floats: boolean): Tensor {
  let [a, b] = operands(name, x, other);
  if (floats && !isFloating(a.dtype)) [a, b] = [castTo(a, 'f32'), castTo(b, 'f32')];
  const out = binaryKernel(code, a, b);
  return recordBinary(out, name, a, b, formula.grad, formula.savesOutput);
}

/** `g` times the unary op's derivative at `x`, from the native kernel. */
export function unaryGrad(code: UnaryOpName, x: Tensor, g: Tensor, a = 0, b = 0): Tensor {
  return wrap(native.unaryBackward(UNARY.get(code) ?? code, x.handle, g.handle, a, b));
}

/**
 * A unary op whose derivative the native kernel provides: integer inputs are promoted to f32
 * unless `keepInts` (the manifest declares integer dtypes), and only floating results are recorded.
 */
export function unaryOp(name: string, code: UnaryOpName, x: Tensor, a = 0, b = 0, keepInts = false): Tensor {
  checkTensor(name, 'input', x);
  const input = keepInts || isFloating(x.dtype) ? x : castTo(x, 'f32');
  const out = wrap(native.unary(UNARY.get(code) ?? code, input.handle, a, b));
  if (!isFloating(input.dtype) || !recording(input)) return out;
  return record(out, name, [input], (g) => [unaryGrad(code, input, g, a, b)], { savesOutput: false });
}

/** A bool-valued unary op (isnan, ...): any dtype, no gradient. */
export function predicateOp(name: string, code: UnaryOpName, x: Tensor): Tensor {
  checkTensor(name, 'input', x);
  return wrap(native.unary(UNARY.get(code) ?? code, x.handle));
}

/** A comparison: both operands promoted to one dtype, a bool result, no gradient. */
export function compareOp(name: string, code: BinaryOpName, x: Tensor, other: TensorLike): Tensor {
  const [a, b] = operands(name, x, other);
  return binaryKernel(code, a, b);
}
