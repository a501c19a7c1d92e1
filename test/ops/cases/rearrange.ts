/** Cases for flip, roll, repeat, tile, unbind (lib/manifest/rearrange.ts). */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr, strides } from './ref';

const ALL = ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64', 'u8', 'bool'] as const;

/** out[c] = x[src(c)] over coordinates: the shape of every rearranging reference. */
function gatherRef(x: Arr, shape: number[], src: (c: number[]) => number[]): Arr {
  const os = strides(shape),
    is = strides(x.shape);
  return arr(shape, (i) => {
    const c = shape.map((s, d) => Math.floor(i / os[d]) % s);
    return x.data[src(c).reduce((k, v, d) => k + v * is[d], 0)];
  });
}

const flipRef = (x: Arr, dims: number[]) => gatherRef(x, x.shape, (c) => c.map((v, d) => (dims.includes(d) ? x.shape[d] - 1 - v : v)));
const rollRef = (x: Arr, shifts: number[], dims: number[]) =>
  gatherRef(x, x.shape, (c) =>
    c.map((v, d) => {
      const k = dims.indexOf(d);
      const n = x.shape[d];
      return k < 0 ? v : (((v - shifts[k]) % n) + n) % n;
    }),
  );
const repeatRef = (x: Arr, reps: number[]) => {
  const lead = reps.length - x.shape.length;
  const shape = reps.map((r, d) => r * (d < lead ? 1 : x.shape[d - lead]));
  return gatherRef(x, shape, (c) => c.slice(lead).map((v, d) => v % x.shape[d]));
};

export const cases: OpCase[] = [
  {
    op: 'flip',
    label: 'dims [0, -1]',
    inputs: [{ shape: [3, 4, 2] }],
    sized: (n) => [{ shape: [n, 2] }],
    run: (x) => x.flip([0, -1]),
    reference: (x) => flipRef(x, [0, x.shape.length - 1]),
    dtypes: [...ALL],
  },
  {
    op: 'roll',
    label: 'shifts [1, -2] dims [0, 1]',
    inputs: [{ shape: [3, 4] }],
    run: (x) => x.roll([1, -2], [0, 1]),
    reference: (x) => rollRef(x, [1, -2], [0, 1]),
    dtypes: [...ALL],
  },
  {
    op: 'roll',
    label: 'flattened',
    inputs: [{ shape: [2, 3] }],
    sized: (n) => [{ shape: [n] }],
    run: (x) => fl.roll(x, 4),
    reference: (x) => {
      const n = x.data.length;
      return arr(x.shape, (i) => x.data[(((i - 4) % n) + n) % n]);
    },
    dtypes: [...ALL],
  },
  {
    op: 'repeat',
    inputs: [{ shape: [2, 3] }],
    sized: (n) => [{ shape: [n, 1] }],
    run: (x) => x.repeat(2, 1, 3),
    reference: (x) => repeatRef(x, [2, 1, 3]),
    dtypes: [...ALL],
  },
  {
    op: 'tile',
    inputs: [{ shape: [2, 3] }],
    run: (x) => x.tile([2]),
    reference: (x) => repeatRef(x, [1, 2]),
    dtypes: [...ALL],
  },
  {
    op: 'unbind',
    label: 'dim 1',
    inputs: [{ shape: [2, 3, 2] }],
    run: (x) => x.unbind(1),
    reference: (x) => [0, 1, 2].map((j) => gatherRef(x, [x.shape[0], x.shape[2]], (c) => [c[0], j, c[1]])),
    dtypes: [...ALL],
  },
];
