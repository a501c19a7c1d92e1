/** The ops that move elements without arithmetic: flip, roll (all generated: no cpp/bindings/rearrange.cc). */
import { BIG, MAX_DIM, fn, group, ints, tensor } from './dsl';

export const rearrangeExports = group('rearrange', 'ops that move elements without arithmetic: flip, roll', [
  fn('flip', [tensor('x'), ints('dims', -MAX_DIM, MAX_DIM, MAX_DIM)], 'tensor', { doc: 'A copy with the given dims reversed.' }),
  fn('roll', [tensor('x'), ints('shifts', -BIG, BIG, MAX_DIM), ints('dims', -MAX_DIM, MAX_DIM, MAX_DIM)], 'tensor', {
    doc: 'A copy rolled by `shifts[i]` along `dims[i]` (equal lengths).',
  }),
]);
