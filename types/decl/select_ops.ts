/** The scan, sort, scatter, select and sample ops (all generated: no cpp/bindings/select_ops.cc). */
import { BIG, MAX_SAFE, bool, choice, dim, fn, group, int, tensor } from './dsl';

export const selectOpsExports = group('select_ops', 'scan, sort, scatter, select and sample ops', [
  fn('scan', [tensor('x'), dim(), bool('prod'), bool('reverse')], 'tensor', {
    doc: 'cumsum (prod false) or cumprod along dim, from the end when `reverse`; integers and bool give i64.',
  }),
  fn('cumprodBackward', [tensor('x'), tensor('grad'), dim()], 'tensor'),
  fn('sort', [tensor('x'), dim(), bool('descending')], 'tensors', {
    doc: 'Stable sort along dim: [values, indices (i64)].',
    ts: '[NewTensor, NewTensor]',
  }),
  fn('topk', [tensor('x'), int('k', 0, BIG), dim(), bool('largest')], 'tensors', { ts: '[NewTensor, NewTensor]' }),
  fn('scatter', [tensor('x'), dim(), tensor('index'), tensor('src')], 'tensor'),
  fn(
    'scatterReduce',
    [
      tensor('x'),
      dim(),
      tensor('index'),
      tensor('src'),
      choice('reduce', ['sum', 'prod', 'mean', 'amax', 'amin'], { enum: 'ScatterReduceOp' }),
      bool('includeSelf'),
    ],
    'tensor',
  ),
  fn('maskedSelect', [tensor('x'), tensor('mask'), int('count', 0, BIG)], 'tensor', {
    doc: '`count`: the number of true elements of the broadcast bool mask.',
  }),
  fn('nonzero', [tensor('mask'), int('count', 0, BIG)], 'tensor', { doc: "[count, ndim] i64 coordinates of a bool mask's true elements." }),
  fn(
    'multinomial',
    [tensor('probs'), int('numSamples', 1, BIG), bool('replacement'), int('seed', 0, MAX_SAFE), int('offset', 0, MAX_SAFE)],
    'tensor',
    {
      doc: 'probs [rows, categories] → [rows, numSamples] i64, from Philox counters at (seed, offset).',
      call: 'ops::multinomial($probs, $numSamples, $replacement, static_cast<uint64_t>($seed), static_cast<uint64_t>($offset))',
    },
  ),
]);
