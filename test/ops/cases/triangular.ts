/** Cases for tril/triu (lib/manifest/triangular.ts). */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr } from './ref';

const ALL = ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64', 'u8', 'bool'] as const;

function triRef(x: Arr, k: number, upper: boolean): Arr {
  const [r, c] = x.shape.slice(-2);
  return arr(x.shape, (e) => {
    const j = e % c,
      i = Math.floor(e / c) % r;
    return (upper ? j - i >= k : j - i <= k) ? x.data[e] : 0;
  });
}

const tri = (op: 'tril' | 'triu', k: number, shape: number[]): OpCase => ({
  op,
  label: `diagonal=${k}, ${shape.join('x')}`,
  inputs: [{ shape }],
  sized: (n) => [{ shape: [n, 3] }],
  run: (x) => (op === 'tril' ? fl.tril(x, k) : fl.triu(x, k)),
  reference: (x) => triRef(x, k, op === 'triu'),
  dtypes: [...ALL],
});

export const cases: OpCase[] = [tri('tril', 0, [4, 5]), tri('tril', -1, [2, 3, 4]), tri('triu', 1, [4, 5]), tri('triu', -2, [2, 4, 3])];
