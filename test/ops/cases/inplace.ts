/**
 * Cases for the in-place methods (lib/manifest/inplace.ts). Each writes into a clone of its
 * first input, so the gradient check runs through the rebased history of a non-leaf.
 */
import * as fl from '../../../lib/index';
import type { OpCase } from '../harness/types';
import { arr, map, zip, zip3 } from './ref';

const FLOATS = ['f32', 'f64', 'bf16', 'f16'] as const;
const NUM = [...FLOATS, 'i32', 'i64'] as const;
const LOW: OpCase['tol'] = { bf16: [2e-2, 2e-2], f16: [2e-3, 2e-3] };

export const cases: OpCase[] = [
  {
    op: 'copy_',
    label: 'recorded: src broadcast into a non-leaf',
    inputs: [{ shape: [3, 4] }, { shape: [4] }],
    run: (x, s) => x.mul(1).copy_(s).mul(x),
    reference: (x, s) => zip(x, s, (a, b) => a * b),
    dtypes: [...FLOATS],
    tol: LOW,
  },
  {
    op: 'clamp',
    label: 'tensor bounds',
    inputs: [{ shape: [3, 4] }, { shape: [4], low: -1, high: -0.1 }, { shape: [3, 1], low: 0.1, high: 1 }],
    run: (x, lo, hi) => x.clamp(lo, hi),
    reference: (x, lo, hi) => zip3(x, lo, hi, (v, l, h) => Math.min(Math.max(v, l), h)),
    dtypes: [...FLOATS],
  },
  {
    op: 'add_',
    label: 'alpha 2, other broadcast',
    inputs: [{ shape: [3, 4] }, { shape: [4] }],
    sized: (n) => [{ shape: [n] }, { shape: [1] }],
    run: (x, o) => x.clone().add_(o, 2),
    reference: (x, o) => zip(x, o, (a, b) => a + 2 * b),
    dtypes: [...NUM],
    tol: LOW,
  },
  {
    op: 'sub_',
    inputs: [{ shape: [3, 4] }, { shape: [3, 1] }],
    run: (x, o) => x.clone().sub_(o),
    reference: (x, o) => zip(x, o, (a, b) => a - b),
    dtypes: [...NUM],
    tol: LOW,
  },
  {
    op: 'mul_',
    inputs: [{ shape: [3, 4] }, { shape: [4] }],
    run: (x, o) => x.clone().mul_(o),
    reference: (x, o) => zip(x, o, (a, b) => a * b),
    dtypes: [...NUM],
    tol: LOW,
  },
  {
    op: 'div_',
    inputs: [{ shape: [3, 4] }, { shape: [4], low: 0.5, high: 2 }],
    run: (x, o) => x.clone().div_(o),
    reference: (x, o) => zip(x, o, (a, b) => a / b),
    dtypes: [...FLOATS],
    tol: LOW,
  },
  {
    op: 'clamp_',
    label: 'number bounds',
    inputs: [{ shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }],
    run: (x) => x.clone().clamp_(-0.5, 0.75),
    reference: (x) => map(x, (v) => Math.min(Math.max(v, -0.5), 0.75)),
    dtypes: [...FLOATS],
  },
  {
    op: 'clamp_',
    label: 'integer bounds on integers',
    inputs: [{ shape: [3, 4], kind: 'int', high: 10 }],
    run: (x) => x.clone().clamp_(2, 6),
    reference: (x) => map(x, (v) => Math.min(Math.max(v, 2), 6)),
    dtypes: ['i32', 'i64'],
    exact: true,
    grad: false,
  },
  {
    op: 'clamp_',
    label: 'tensor bounds',
    inputs: [{ shape: [3, 4] }, { shape: [4], low: -1, high: -0.1 }, { shape: [3, 1], low: 0.1, high: 1 }],
    run: (x, lo, hi) => x.clone().clamp_(lo, hi),
    reference: (x, lo, hi) => zip3(x, lo, hi, (v, l, h) => Math.min(Math.max(v, l), h)),
    dtypes: [...FLOATS],
  },
  {
    op: 'fill_',
    label: 'a 0-d tensor value',
    inputs: [{ shape: [3, 4] }, { shape: [] }],
    run: (x, v) => x.clone().fill_(v).mul(x),
    reference: (x, v) => map(x, (a) => a * v.data[0]),
    dtypes: [...FLOATS],
    tol: LOW,
  },
  {
    op: 'zero_',
    inputs: [{ shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }],
    run: (x) => x.clone().zero_(),
    reference: (x) => map(x, () => 0),
    dtypes: [...NUM, 'bool', 'u8'],
    exact: true,
    grad: false,
  },
  {
    op: 'uniform_',
    inputs: [{ shape: [3, 4] }],
    run: (x) => {
      const t = fl.zeros([x.numel() * 300], { dtype: x.dtype, device: x.device }).uniform_(-2, 3);
      const v = Array.from(t.to('cpu').to('f64').dataSync() as Float64Array);
      const mean = v.reduce((a, b) => a + b, 0) / v.length;
      return fl.tensor([v.every((e) => e >= -2 && e <= 3) ? 1 : 0, Math.abs(mean - 0.5) < 0.1 ? 1 : 0], { dtype: 'f64', device: x.device });
    },
    reference: () => arr([2], [1, 1]),
    dtypes: [...FLOATS],
    exact: true,
    grad: false,
  },
  {
    op: 'normal_',
    inputs: [{ shape: [3, 4] }],
    run: (x) => {
      const t = fl.zeros([x.numel() * 300], { dtype: x.dtype, device: x.device }).normal_(1, 2);
      const v = Array.from(t.to('cpu').to('f64').dataSync() as Float64Array);
      const mean = v.reduce((a, b) => a + b, 0) / v.length;
      const sd = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / (v.length - 1));
      return fl.tensor([Math.abs(mean - 1) < 0.15 ? 1 : 0, Math.abs(sd - 2) < 0.15 ? 1 : 0], { dtype: 'f64', device: x.device });
    },
    reference: () => arr([2], [1, 1]),
    dtypes: [...FLOATS],
    exact: true,
    grad: false,
  },
];
