/** The ops that move elements without arithmetic: tril/triu, flip, roll (all generated: no cpp/bindings/rearrange.cc). */
import { BIG, MAX_DIM, bool, fn, group, int, ints, tensor } from './dsl';

export const rearrangeExports = group('rearrange', 'ops that move elements without arithmetic: tril/triu, flip, roll', [
  fn('triangular', [tensor('x'), int('diagonal', -BIG, BIG), bool('upper')], 'tensor', {
    doc: 'tril (upper false) or triu (upper true) over the last two dims, relative to `diagonal`.',
  }),
  fn('flip', [tensor('x'), ints('dims', -MAX_DIM, MAX_DIM, MAX_DIM)], 'tensor', { doc: 'A copy with the given dims reversed.' }),
  fn('roll', [tensor('x'), ints('shifts', -BIG, BIG, MAX_DIM), ints('dims', -MAX_DIM, MAX_DIM, MAX_DIM)], 'tensor', {
    doc: 'A copy rolled by `shifts[i]` along `dims[i]` (equal lengths).',
  }),
]);
