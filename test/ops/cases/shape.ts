/** Cases for the shape ops (lib/manifest/shape.ts): the reference moves values, the op must too. */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr, permute, strides } from './ref';

const ALL = ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64', 'u8', 'bool'] as const;
const reshaped = (x: Arr, shape: number[]): Arr => ({ shape, data: Float64Array.from(x.data) });

/** Elements [start, start+length) of `dim`. */
function narrowRef(x: Arr, dim: number, start: number, length: number): Arr {
  const d = dim < 0 ? dim + x.shape.length : dim;
  const shape = [...x.shape];
  shape[d] = length;
  const st = strides(x.shape),
    os = strides(shape);
  return arr(shape, (i) => {
    let k = 0;
    for (let e = 0; e < shape.length; e++) k += ((Math.floor(i / os[e]) % shape[e]) + (e === d ? start : 0)) * st[e];
    return x.data[k];
  });
}

function catRef(xs: Arr[], dim: number): Arr {
  const d = dim < 0 ? dim + xs[0].shape.length : dim;
  const shape = [...xs[0].shape];
  shape[d] = xs.reduce((a, x) => a + x.shape[d], 0);
  const outer = shape.slice(0, d).reduce((a, b) => a * b, 1);
  const data: number[] = [];
  for (let o = 0; o < outer; o++)
    for (const x of xs) {
      const chunk = x.shape.slice(d).reduce((a, b) => a * b, 1);
      data.push(...x.data.subarray(o * chunk, (o + 1) * chunk));
    }
  return arr(shape, data);
}

function expandRef(x: Arr, shape: number[]): Arr {
  const off = shape.length - x.shape.length;
  const st = strides(x.shape),
    os = strides(shape);
  return arr(shape, (i) => {
    let k = 0;
    for (let d = off; d < shape.length; d++) if (x.shape[d - off] !== 1) k += (Math.floor(i / os[d]) % shape[d]) * st[d - off];
    return x.data[k];
  });
}

const base: Partial<OpCase> = { dtypes: ['f32', 'f64', 'bf16', 'i64', 'bool'] };

export const cases: OpCase[] = [
  {
    op: 'reshape',
    inputs: [{ shape: [3, 4] }],
    sized: (n) => [{ shape: [n, 2] }],
    run: (x) => x.reshape(2, -1),
    reference: (x) => reshaped(x, [2, x.data.length / 2]),
    ...base,
    dtypes: [...ALL],
  },
  {
    op: 'flatten',
    inputs: [{ shape: [2, 3, 2] }],
    sized: (n) => [{ shape: [2, n, 2] }],
    run: (x) => x.flatten(1),
    reference: (x) => reshaped(x, [x.shape[0], x.shape[1] * x.shape[2]]),
    ...base,
  },
  {
    op: 'squeeze',
    inputs: [{ shape: [3, 1, 2] }],
    sized: (n) => [{ shape: [n, 1] }],
    run: (x) => x.squeeze(1),
    reference: (x) =>
      reshaped(
        x,
        x.shape.filter((_, i) => i !== 1),
      ),
    ...base,
  },
  {
    op: 'squeeze',
    label: 'every size-1 dim',
    inputs: [{ shape: [1, 3, 1] }],
    run: (x) => x.squeeze(),
    reference: (x) => reshaped(x, [3]),
    ...base,
  },
  {
    op: 'unsqueeze',
    inputs: [{ shape: [3, 2] }],
    sized: (n) => [{ shape: [n] }],
    run: (x) => x.unsqueeze(-1),
    reference: (x) => reshaped(x, [...x.shape, 1]),
    ...base,
  },
  {
    op: 'expand',
    inputs: [{ shape: [1, 3] }],
    sized: (n) => [{ shape: [n, 1] }],
    run: (x) => (x.shape[0] === 1 ? x.expand(4, -1) : x.expand(-1, 3)),
    reference: (x) => expandRef(x, x.shape[0] === 1 ? [4, x.shape[1]] : [x.shape[0], 3]),
    ...base,
  },
  {
    op: 'expand',
    label: 'new leading dims',
    inputs: [{ shape: [3] }],
    run: (x) => x.expand(2, 2, 3),
    reference: (x) => expandRef(x, [2, 2, 3]),
    ...base,
  },
  {
    op: 'permute',
    inputs: [{ shape: [2, 3, 4] }],
    sized: (n) => [{ shape: [2, n, 3] }],
    run: (x) => x.permute(2, 0, 1),
    reference: (x) => permute(x, [2, 0, 1]),
    ...base,
    dtypes: [...ALL],
  },
  {
    op: 'transpose',
    inputs: [{ shape: [3, 4] }],
    sized: (n) => [{ shape: [n, 7] }],
    run: (x) => x.transpose(0, 1),
    reference: (x) => permute(x, [1, 0]),
    ...base,
  },
  {
    op: 'transpose',
    label: 'dims 0 and 2',
    inputs: [{ shape: [2, 3, 2] }],
    run: (x) => x.transpose(0, 2),
    reference: (x) => permute(x, [2, 1, 0]),
    ...base,
  },
  {
    op: 'narrow',
    inputs: [{ shape: [3, 5] }],
    sized: (n) => [{ shape: [2, n + 2] }],
    run: (x) => x.narrow(1, 1, x.shape[1] - 2),
    reference: (x) => narrowRef(x, 1, 1, x.shape[1] - 2),
    ...base,
    dtypes: [...ALL],
  },
  {
    op: 'narrow',
    label: 'dim 0',
    inputs: [{ shape: [5, 2] }],
    sized: (n) => [{ shape: [n + 1, 3] }],
    run: (x) => x.narrow(0, 1, x.shape[0] - 1),
    reference: (x) => narrowRef(x, 0, 1, x.shape[0] - 1),
    ...base,
  },
  {
    op: 'slice',
    inputs: [{ shape: [5, 2] }],
    sized: (n) => [{ shape: [n, 2] }],
    run: (x) => x.slice(0, -3),
    reference: (x) => narrowRef(x, 0, Math.max(0, x.shape[0] - 3), Math.min(3, x.shape[0])),
    ...base,
  },
  {
    op: 'cat',
    inputs: [{ shape: [2, 3] }, { shape: [2, 2] }],
    sized: (n) => [{ shape: [2, n] }, { shape: [2, 3] }],
    run: (a, b) => fl.cat([a, b], 1),
    reference: (a, b) => catRef([a, b], 1),
    ...base,
    dtypes: [...ALL],
  },
  {
    op: 'cat',
    label: 'dim 0, three tensors',
    inputs: [{ shape: [1, 3] }, { shape: [2, 3] }, { shape: [1, 3] }],
    run: (a, b, c) => fl.cat([a, b, c], 0),
    reference: (a, b, c) => catRef([a, b, c], 0),
    ...base,
  },
  {
    op: 'stack',
    inputs: [{ shape: [2, 3] }, { shape: [2, 3] }],
    sized: (n) => [{ shape: [n] }, { shape: [n] }],
    run: (a, b) => fl.stack([a, b], 1),
    reference: (a, b) => catRef([reshaped(a, [a.shape[0], 1, ...a.shape.slice(1)]), reshaped(b, [b.shape[0], 1, ...b.shape.slice(1)])], 1),
    ...base,
  },
  {
    op: 'split',
    inputs: [{ shape: [5, 2] }],
    sized: (n) => [{ shape: [n, 2] }],
    run: (x) => x.split(2, 0),
    reference: (x) =>
      Array.from({ length: Math.max(1, Math.ceil(x.shape[0] / 2)) }, (_, i) => narrowRef(x, 0, 2 * i, Math.min(2, x.shape[0] - 2 * i))),
    ...base,
  },
  {
    op: 'split',
    label: 'sections',
    inputs: [{ shape: [2, 6] }],
    run: (x) => x.split([1, 3, 2], 1),
    reference: (x) => [narrowRef(x, 1, 0, 1), narrowRef(x, 1, 1, 3), narrowRef(x, 1, 4, 2)],
    ...base,
  },
  {
    op: 'chunk',
    inputs: [{ shape: [2, 7] }],
    run: (x) => x.chunk(3, 1),
    reference: (x) => [narrowRef(x, 1, 0, 3), narrowRef(x, 1, 3, 3), narrowRef(x, 1, 6, 1)],
    ...base,
  },
];
