/** The element-wise, reduction, matmul, shape and indexing ops (cpp/bindings/ops.cc for the hand-written ones). */
import { BIG, MAX_DIM, bool, choice, dim, dtype, device, fn, group, hand, int, ints, dims, number, opCode, tensor, tensors } from './dsl';

export const opsExports = group('ops', 'element-wise, reduction, matmul, shape and indexing ops', [
  fn('unary', [opCode('unary'), tensor('x'), number('a', { default: 0 }), number('b', { default: 0 })], 'tensor'),
  fn('unaryBackward', [opCode('unary'), tensor('x'), tensor('grad'), number('a', { default: 0 }), number('b', { default: 0 })], 'tensor'),
  fn('binary', [opCode('binary'), tensor('a'), tensor('b')], 'tensor'),
  fn('binary_', [opCode('binary'), tensor('self'), tensor('b')], 'bool', {
    doc: 'self = self op b in place (arithmetic, same dtype, b broadcasting to self); false when b overlaps self other than element for element.',
  }),
  hand(
    'fill_',
    'FillInPlace',
    '(self: NativeTensor, value: number): void',
    'Every element of self set to value, in place (ERR_RANGE when an integer dtype cannot hold it).',
  ),
  fn('where', [tensor('cond'), tensor('a'), tensor('b')], 'tensor'),
  fn('cast', [tensor('x'), dtype()], 'tensor'),
  fn('clone', [tensor('x')], 'tensor'),
  fn('copy_', [tensor('dst'), tensor('src')], 'void'),
  fn('to', [tensor('x'), device()], 'tensor', { call: 'ops::to_device($x, $device)' }),
  fn('reduce', [opCode('reduce'), tensor('x'), dims('dims'), bool('keepdim'), number('correction', { default: 0 })], 'tensor'),
  fn('softmax', [tensor('x'), dim(), bool('log')], 'tensor'),
  fn('matmul', [tensor('a'), tensor('b'), bool('transA'), bool('transB')], 'tensor'),
  fn('matmulLowered', [tensor('a'), tensor('b'), bool('transA'), bool('transB'), dtype('compute'), dtype('out')], 'tensor', {
    doc: 'op(a)·op(b) with the values of casting f32 operands to `compute`, multiplying and casting the result to `out`.',
  }),
  hand(
    'matmulInto',
    null,
    '(a: NativeTensor, b: NativeTensor, transA: boolean, transB: boolean, out: NativeTensor, compute: string | null): boolean',
    'out += op(a)·op(b) (2-D), computed as matmul, or matmulLowered with `compute`, computes it, bit for bit as adding the product afterwards; false, with nothing queued, where that takes two passes.',
  ),
  fn('reshape', [tensor('x'), ints('shape', -1, BIG)], 'tensor'),
  fn('narrow', [tensor('x'), dim(), int('start', -BIG, BIG), int('length', 0, BIG)], 'tensor'),
  fn('permute', [tensor('x'), ints('dims', -MAX_DIM, MAX_DIM)], 'tensor'),
  fn('expand', [tensor('x'), ints('shape', -1, BIG)], 'tensor'),
  fn('cat', [tensors('xs'), dim()], 'tensor'),
  fn(
    'indexSelect',
    [tensor('x'), dim(), tensor('index'), choice('op', ['indexSelect', 'embedding'], { default: 'indexSelect' })],
    'tensor',
    {
      doc: "Rows of x along dim; `op` names the caller in errors (default 'indexSelect').",
      call: 'ops::index_select($x, $dim, $index, kOpNames[$op])',
    },
  ),
  fn('gather', [tensor('x'), dim(), tensor('index'), choice('op', ['gather', 'nllLoss'], { default: 'gather' })], 'tensor', {
    doc: "`op` names the caller in errors (default 'gather').",
    call: 'ops::gather($x, $dim, $index, kOpNames[$op])',
  }),
  fn('scatterAdd', [tensor('x'), dim(), tensor('index'), tensor('src')], 'tensor'),
]);
