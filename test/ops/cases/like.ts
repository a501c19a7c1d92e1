/** Cases for randLike/randnLike (lib/manifest/like.ts): shape, dtype and sample moments. */
import * as fl from '../../../lib/index';
import type { Tensor } from '../../../lib/index';
import type { OpCase } from '../harness/types';
import { arr } from './ref';

/** [all in [lo, hi), mean near m, std near s, same shape and dtype] as 0/1 over 300 draws of x's shape. */
function check(draw: (t: Tensor) => Tensor, x: Tensor, lo: number, hi: number, m: number, s: number): Tensor {
  const big = fl.zeros([x.numel() * 300], { dtype: x.dtype, device: x.device });
  const t = draw(big);
  const v = Array.from(t.to('cpu').to('f64').dataSync() as Float64Array);
  const mean = v.reduce((a, b) => a + b, 0) / Math.max(v.length, 1);
  const sd = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(v.length - 1, 1));
  const same = draw(x);
  const ok = [
    v.every((e) => e >= lo && e < hi),
    v.length < 2000 || Math.abs(mean - m) < 0.06,
    v.length < 2000 || Math.abs(sd - s) < 0.06,
    same.dtype === x.dtype && same.device === x.device && same.shape.join() === x.shape.join(),
  ];
  return fl.tensor(
    ok.map((b) => (b ? 1 : 0)),
    { dtype: 'f64', device: x.device },
  );
}
const passes = () => arr([4], [1, 1, 1, 1]);
const FLOATS = ['f32', 'f64', 'bf16', 'f16'] as const;

export const cases: OpCase[] = [
  {
    op: 'randLike',
    inputs: [{ shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }],
    run: (x) => check(fl.randLike, x, 0, 1.001, 0.5, Math.sqrt(1 / 12)),
    reference: passes,
    dtypes: [...FLOATS],
    exact: true,
    grad: false,
  },
  {
    op: 'randnLike',
    inputs: [{ shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }],
    run: (x) => check(fl.randnLike, x, -1e9, 1e9, 0, 1),
    reference: passes,
    dtypes: [...FLOATS],
    exact: true,
    grad: false,
  },
];
