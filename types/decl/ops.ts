/** The element-wise, reduction, matmul, shape and indexing ops (cpp/bindings/ops.cc). */
import { group, hand } from './dsl';

export const ops = group('ops', 'element-wise, reduction, matmul, shape and indexing ops', [
  hand('unary', null, '(op: UnaryOpName | number, x: NativeTensor, a?: number, b?: number): NewTensor'),
  hand('unaryBackward', null, '(op: UnaryOpName | number, x: NativeTensor, grad: NativeTensor, a?: number, b?: number): NewTensor'),
  hand('binary', null, '(op: BinaryOpName | number, a: NativeTensor, b: NativeTensor): NewTensor'),
  hand(
    'binary_',
    'BinaryInPlace',
    '(op: BinaryOpName | number, self: NativeTensor, b: NativeTensor): boolean',
    'self = self op b in place (arithmetic, same dtype, b broadcasting to self); false when b overlaps self other than element for element.',
  ),
  hand(
    'fill_',
    'FillInPlace',
    '(self: NativeTensor, value: number): void',
    'Every element of self set to value, in place (ERR_RANGE when an integer dtype cannot hold it).',
  ),
  hand('where', null, '(cond: NativeTensor, a: NativeTensor, b: NativeTensor): NewTensor'),
  hand('cast', null, '(x: NativeTensor, dtype: NativeDType): NewTensor'),
  hand('clone', null, '(x: NativeTensor): NewTensor'),
  hand('copy_', 'CopyInPlace', '(dst: NativeTensor, src: NativeTensor): void'),
  hand('to', null, '(x: NativeTensor, device: string): NewTensor'),
  hand('reduce', null, '(op: ReduceOpName | number, x: NativeTensor, dims: number[], keepdim: boolean, correction?: number): NewTensor'),
  hand('softmax', null, '(x: NativeTensor, dim: number, log: boolean): NewTensor'),
  hand('matmul', null, '(a: NativeTensor, b: NativeTensor, transA: boolean, transB: boolean): NewTensor'),
  hand(
    'matmulLowered',
    null,
    '(a: NativeTensor, b: NativeTensor, transA: boolean, transB: boolean, compute: string, out: string): NewTensor',
    'op(a)·op(b) with the values of casting f32 operands to `compute`, multiplying and casting the result to `out`.',
  ),
  hand(
    'matmulInto',
    null,
    '(a: NativeTensor, b: NativeTensor, transA: boolean, transB: boolean, out: NativeTensor, compute: string | null): boolean',
    'out += op(a)·op(b) (2-D), computed as matmul, or matmulLowered with `compute`, computes it, bit for bit as adding the product afterwards; false, with nothing queued, where that takes two passes.',
  ),
  hand('reshape', null, '(x: NativeTensor, shape: number[]): NewTensor'),
  hand('narrow', null, '(x: NativeTensor, dim: number, start: number, length: number): NewTensor'),
  hand('permute', null, '(x: NativeTensor, dims: number[]): NewTensor'),
  hand('expand', null, '(x: NativeTensor, shape: number[]): NewTensor'),
  hand('cat', null, '(xs: NativeTensor[], dim: number): NewTensor'),
  hand(
    'indexSelect',
    null,
    "(x: NativeTensor, dim: number, index: NativeTensor, op?: 'indexSelect' | 'embedding'): NewTensor",
    "Rows of x along dim; `op` names the caller in errors (default 'indexSelect').",
  ),
  hand(
    'gather',
    null,
    "(x: NativeTensor, dim: number, index: NativeTensor, op?: 'gather' | 'nllLoss'): NewTensor",
    "`op` names the caller in errors (default 'gather').",
  ),
  hand('scatterAdd', null, '(x: NativeTensor, dim: number, index: NativeTensor, src: NativeTensor): NewTensor'),
]);
