/** Cases for maskedSelect and nonzero (lib/manifest/select.ts); masks are inputs, never differentiated. */
import * as fl from '../../../lib/index';
import type { OpCase } from '../harness/types';
import { arr, broadcastShape, strides } from './ref';

const mask = (shape: number[]) => ({ shape, kind: 'bool' as const, noGrad: true });

export const cases: OpCase[] = [
  {
    op: 'maskedSelect',
    inputs: [{ shape: [3, 5] }, mask([3, 5])],
    sized: (n) => [{ shape: [n] }, mask([n])],
    run: (x, m) => x.maskedSelect(m),
    reference: (x, m) => {
      const picked = Array.from(x.data).filter((_, i) => m.data[i] !== 0);
      return arr([picked.length], picked);
    },
    dtypes: ['f32', 'f64', 'bf16', 'f16', 'i64'],
  },
  {
    op: 'maskedSelect',
    label: 'mask broadcast over rows, input over columns',
    inputs: [{ shape: [4, 1] }, mask([3])],
    run: (x, m) => fl.maskedSelect(x, m),
    reference: (x, m) => {
      const shape = broadcastShape(x.shape, m.shape);
      const out: number[] = [];
      for (let r = 0; r < shape[0]; r++) for (let c = 0; c < shape[1]; c++) if (m.data[c]) out.push(x.data[r]);
      return arr([out.length], out);
    },
  },
  {
    op: 'nonzero',
    inputs: [{ shape: [3, 4, 2], kind: 'int', high: 3 }],
    sized: (n) => [{ shape: [2, n], kind: 'int', high: 2 }],
    run: (x) => x.nonzero(),
    reference: (x) => {
      const st = strides(x.shape);
      const out: number[] = [];
      x.data.forEach((v, i) => {
        if (v !== 0) for (let d = 0; d < x.shape.length; d++) out.push(Math.floor(i / st[d]) % x.shape[d]);
      });
      return arr([out.length / x.shape.length, x.shape.length], out);
    },
    dtypes: ['i64'],
  },
  {
    op: 'nonzero',
    label: 'asTuple, floats',
    inputs: [{ shape: [5, 3], values: [0, 1, 0, 2, 0, 0, 0, -1, 3, 0, 0, 0, 0.5, 0, 0] }],
    run: (x) => x.nonzero({ asTuple: true }),
    reference: () => [arr([5], [0, 1, 2, 2, 4]), arr([5], [1, 0, 1, 2, 0])],
  },
];
