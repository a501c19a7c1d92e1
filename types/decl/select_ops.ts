/** The scan, sort, scatter, select and sample ops (cpp/bindings/select_ops.cc). */
import { group, hand } from './dsl';

export const selectOps = group('select_ops', 'scan, sort, scatter, select and sample ops', [
  hand(
    'scan',
    null,
    '(x: NativeTensor, dim: number, prod: boolean, reverse: boolean): NewTensor',
    'cumsum (prod false) or cumprod along dim, from the end when `reverse`; integers and bool give i64.',
  ),
  hand('cumprodBackward', null, '(x: NativeTensor, grad: NativeTensor, dim: number): NewTensor'),
  hand(
    'sort',
    null,
    '(x: NativeTensor, dim: number, descending: boolean): [NewTensor, NewTensor]',
    'Stable sort along dim: [values, indices (i64)].',
  ),
  hand('topk', null, '(x: NativeTensor, k: number, dim: number, largest: boolean): [NewTensor, NewTensor]'),
  hand('scatter', null, '(x: NativeTensor, dim: number, index: NativeTensor, src: NativeTensor): NewTensor'),
  hand(
    'scatterReduce',
    null,
    '(x: NativeTensor, dim: number, index: NativeTensor, src: NativeTensor, reduce: ScatterReduceName, includeSelf: boolean): NewTensor',
  ),
  hand(
    'maskedSelect',
    null,
    '(x: NativeTensor, mask: NativeTensor, count: number): NewTensor',
    '`count`: the number of true elements of the broadcast bool mask.',
  ),
  hand('nonzero', null, '(mask: NativeTensor, count: number): NewTensor', "[count, ndim] i64 coordinates of a bool mask's true elements."),
  hand(
    'multinomial',
    null,
    '(probs: NativeTensor, numSamples: number, replacement: boolean, seed: number, offset: number): NewTensor',
    'probs [rows, categories] → [rows, numSamples] i64, from Philox counters at (seed, offset).',
  ),
]);
