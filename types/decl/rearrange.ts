/** The ops that move elements without arithmetic: tril/triu, flip, roll (cpp/bindings/rearrange.cc). */
import { group, hand } from './dsl';

export const rearrange = group('rearrange', 'ops that move elements without arithmetic: tril/triu, flip, roll', [
  hand(
    'triangular',
    null,
    '(x: NativeTensor, diagonal: number, upper: boolean): NewTensor',
    'tril (upper false) or triu (upper true) over the last two dims, relative to `diagonal`.',
  ),
  hand('flip', null, '(x: NativeTensor, dims: number[]): NewTensor', 'A copy with the given dims reversed.'),
  hand(
    'roll',
    null,
    '(x: NativeTensor, shifts: number[], dims: number[]): NewTensor',
    'A copy rolled by `shifts[i]` along `dims[i]` (equal lengths).',
  ),
]);
