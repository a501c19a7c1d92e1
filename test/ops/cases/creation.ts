/**
 * Cases for the creation ops (lib/manifest/creation.ts). Each takes an input only for its
 * dtype and device (the harness picks both), or as the tensor a *Like op copies the shape of.
 * Random ops are checked by their properties (range, integrality, moments) with a fixed seed.
 */
import * as fl from '../../../lib/index';
import type { Tensor } from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr } from './ref';

const on = (t: Tensor) => ({ dtype: t.dtype, device: t.device });
const filled = (shape: number[], v: number): Arr => arr(shape, () => v);
const ALL = ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64', 'u8', 'bool'] as const;
const NUM = ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64', 'u8'] as const;

/** A case whose op makes a tensor of `shape(x)` from nothing but the probe's dtype and device. */
function make(op: string, run: (x: Tensor) => Tensor | Tensor[], reference: (x: Arr) => Arr | Arr[], extra: Partial<OpCase> = {}): OpCase {
  return { op, inputs: [{ shape: [3, 4] }], sized: (n) => [{ shape: [n] }], run, reference, dtypes: [...ALL], grad: false, ...extra };
}

/** Range and moment checks of a random tensor: [all in range, mean near m, std near s], as 0/1. */
function moments(t: Tensor, lo: number, hi: number, m: number, s: number, tol: number): Tensor[] {
  const v = Array.from(t.to('cpu').to('f64').dataSync() as Float64Array);
  const mean = v.reduce((a, b) => a + b, 0) / Math.max(v.length, 1);
  const sd = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(v.length - 1, 1));
  const ok = (b: boolean) => fl.tensor([b ? 1 : 0], { dtype: 'f64', device: t.device });
  const inRange = v.every((x) => x >= lo && x < hi);
  return [
    ok(inRange),
    ok(v.length < 2000 || Math.abs(mean - m) < tol),
    ok(v.length < 2000 || Math.abs(sd - s) < tol),
    fl.tensor([t.shape.length], { dtype: 'f64', device: t.device }),
  ];
}
const passes = (ndim: number) => [arr([1], [1]), arr([1], [1]), arr([1], [1]), arr([1], [ndim])];

export const cases: OpCase[] = [
  make(
    'tensor',
    (x) =>
      fl.tensor(
        [
          [1, 2, 3],
          [4, 5, 0],
        ],
        on(x),
      ),
    () =>
      arr(
        [2, 3],
        [1, 2, 3, 4, 5, 0].map((v) => v),
      ),
    { dtypes: [...NUM], sized: undefined },
  ),
  make(
    'tensor',
    (x) => fl.tensor([true, false, true], on(x)),
    () => arr([3], [1, 0, 1]),
    { label: 'booleans', dtypes: ['bool'], sized: undefined },
  ),
  make(
    'full',
    (x) => fl.full([...x.shape], 3, on(x)),
    (x) => filled(x.shape, 3),
    { dtypes: [...NUM] },
  ),
  make(
    'zeros',
    (x) => fl.zeros([...x.shape], on(x)),
    (x) => filled(x.shape, 0),
  ),
  make(
    'ones',
    (x) => fl.ones([...x.shape], on(x)),
    (x) => filled(x.shape, 1),
  ),
  make(
    'zerosLike',
    (x) => fl.zerosLike(x),
    (x) => filled(x.shape, 0),
  ),
  make(
    'onesLike',
    (x) => fl.onesLike(x),
    (x) => filled(x.shape, 1),
  ),
  make(
    'fullLike',
    (x) => fl.fullLike(x, 5),
    (x) => filled(x.shape, 5),
    { dtypes: [...NUM] },
  ),
  make(
    'arange',
    (x) => fl.arange(1, 1 + 2 * x.numel(), 2, on(x)),
    (x) => arr([x.data.length], (i) => 1 + 2 * i),
    { dtypes: ['f32', 'f64', 'i32', 'i64'] },
  ),
  make(
    'arange',
    (x) => fl.arange(5, 5 - 0.5 * x.numel(), -0.5, on(x)),
    (x) => arr([x.data.length], (i) => 5 - 0.5 * i),
    {
      label: 'negative fractional step',
      dtypes: ['f32', 'f64'],
    },
  ),
  make(
    'linspace',
    (x) => fl.linspace(-1, 2, x.numel(), on(x)),
    (x) => {
      const n = x.data.length;
      return arr([n], (i) => (n === 1 ? -1 : -1 + (3 * i) / (n - 1)));
    },
    { dtypes: ['f32', 'f64'], tol: { f32: [1e-6, 1e-6] } },
  ),
  // Integer dtypes take the f64 values truncated toward zero, as torch.linspace (0, 10, 4 gives 0, 3, 6, 10).
  make(
    'linspace',
    (x) => fl.linspace(-7, 10, x.numel(), on(x)),
    (x) => {
      const n = x.data.length;
      return arr([n], (i) => Math.trunc(n === 1 ? -7 : -7 + (17 * i) / (n - 1)));
    },
    { label: 'integers', dtypes: ['i32', 'i64'] },
  ),
  make(
    'eye',
    (x) => fl.eye(x.shape[0], x.shape[1], on(x)),
    (x) => arr([x.shape[0], x.shape[1]], (i) => (Math.floor(i / x.shape[1]) === i % x.shape[1] ? 1 : 0)),
    { sized: (n) => [{ shape: [n, 3] }] },
  ),
  // bf16 and f16 samples just below 1 round to 1 (the kernel draws in f32 and rounds), so [0, 1] there.
  make(
    'rand',
    (x) => moments(fl.rand([x.numel() * 300], on(x)), 0, x.dtype === 'bf16' || x.dtype === 'f16' ? 1.001 : 1, 0.5, Math.sqrt(1 / 12), 0.03),
    () => passes(1),
    {
      dtypes: ['f32', 'f64', 'bf16', 'f16'],
      sized: undefined,
    },
  ),
  make(
    'randn',
    (x) => moments(fl.randn([x.numel() * 300], on(x)), -1e9, 1e9, 0, 1, 0.06),
    () => passes(1),
    {
      dtypes: ['f32', 'f64', 'bf16', 'f16'],
      sized: undefined,
    },
  ),
  make(
    'randint',
    (x) => {
      const t = fl.randint(-3, 4, [x.numel() * 300], on(x));
      const v = t.to('f64');
      return [...moments(t, -3, 4, 0, 2, 0.15), v.eq(fl.round(v)).to('f64').min().reshape([1])];
    },
    () => [...passes(1), arr([1], [1])],
    { dtypes: ['f32', 'f64', 'i32', 'i64'], sized: undefined },
  ),
  make(
    'bernoulli',
    (x) => {
      const t = fl.bernoulli([x.numel() * 300], 0.25, on(x));
      return moments(t, 0, 2, 0.25, Math.sqrt(0.25 * 0.75), 0.04);
    },
    () => passes(1),
    { dtypes: ['f32', 'f64', 'bool', 'u8'], sized: undefined },
  ),
];
