/** Cases for where and maskedFill (lib/manifest/where.ts). */
import * as fl from '../../../lib/index';
import type { OpCase } from '../harness/types';
import { zip, zip3 } from './ref';

export const cases: OpCase[] = [
  {
    op: 'where',
    inputs: [{ shape: [3, 4], kind: 'bool' }, { shape: [3, 4] }, { shape: [4] }],
    sized: (n) => [{ shape: [n], kind: 'bool' }, { shape: [n] }, { shape: [1] }],
    dtypes: ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64'],
    run: (c, a, b) => fl.where(c, a, b),
    reference: (c, a, b) => zip3(c, a, b, (p, x, y) => (p ? x : y)),
  },
  {
    op: 'where',
    label: 'a number for other',
    inputs: [{ shape: [2, 5], kind: 'bool' }, { shape: [2, 5] }],
    run: (c, a) => fl.where(c, a, 7),
    reference: (c, a) => zip(c, a, (p, x) => (p ? x : 7)),
  },
  {
    op: 'maskedFill',
    inputs: [{ shape: [3, 4] }, { shape: [1, 4], kind: 'bool' }],
    sized: (n) => [{ shape: [n] }, { shape: [n], kind: 'bool' }],
    dtypes: ['f32', 'f64', 'bf16', 'f16', 'i64'],
    run: (x, m) => x.maskedFill(m, -2),
    reference: (x, m) => zip(x, m, (v, p) => (p ? -2 : v)),
  },
];
