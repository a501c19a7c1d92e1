/** Cases for norm (lib/manifest/norms.ts). */
import * as fl from '../../../lib/index';
import type { OpCase } from '../harness/types';
import { reduce } from './ref';

function pnorm(p: number): (vs: number[]) => number {
  return (vs) => {
    const a = vs.map(Math.abs);
    if (p === Number.POSITIVE_INFINITY) return Math.max(...a);
    if (p === Number.NEGATIVE_INFINITY) return Math.min(...a);
    if (p === 0) return a.filter((v) => v !== 0).length;
    return a.reduce((s, v) => s + v ** p, 0) ** (1 / p);
  };
}

const norm = (p: number | 'fro', dim: number | number[] | undefined, keepdim: boolean, tol = 1): OpCase => ({
  op: 'norm',
  label: `p=${p}, dim=${JSON.stringify(dim)}${keepdim ? ', keepdim' : ''}`,
  inputs: [{ shape: [3, 4] }],
  run: (x) => fl.norm(x, p, dim, keepdim),
  reference: (x) => reduce(x, dim === undefined ? undefined : ([] as number[]).concat(dim), keepdim, pnorm(p === 'fro' ? 2 : p)),
  dtypes: ['f32', 'f64', 'bf16', 'f16'],
  tol: { bf16: [3e-2 * tol, 3e-2], f16: [5e-3 * tol, 5e-3] },
});

export const cases: OpCase[] = [
  norm('fro', undefined, false),
  norm(2, -1, false),
  norm(1, 0, true),
  norm(3, [0, 1], false),
  norm(1.5, 1, false),
  norm(Number.POSITIVE_INFINITY, 1, false),
  norm(Number.NEGATIVE_INFINITY, 0, true),
  { ...norm(0, 1, false), grad: false },
];
