import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';
import { gradcheck, rnd } from '../helpers/gradcheck';

/** Brute-force f64 einsum over explicit letter-only equations (the reference). */
function ref(eq: string, ...xs: fl.Tensor[]): number[] {
  const [lhs, rhs] = eq.split('->');
  const terms = lhs.split(',');
  const size = new Map<string, number>();
  terms.forEach((t, i) => [...t].forEach((l, d) => size.set(l, xs[i].shape[d])));
  const labels = [...size.keys()];
  const vals = xs.map(values);
  const outShape = [...rhs].map((l) => size.get(l)!);
  const out = new Array(outShape.reduce((a, b) => a * b, 1)).fill(0);
  const idx = new Map<string, number>();
  const walk = (k: number): void => {
    if (k === labels.length) {
      let p = 1;
      terms.forEach((t, i) => {
        let off = 0;
        [...t].forEach((l, d) => (off = off * xs[i].shape[d] + idx.get(l)!));
        p *= vals[i][off];
      });
      let o = 0;
      [...rhs].forEach((l, d) => (o = o * outShape[d] + idx.get(l)!));
      out[o] += p;
      return;
    }
    for (let v = 0; v < size.get(labels[k])!; v++) {
      idx.set(labels[k], v);
      walk(k + 1);
    }
  };
  walk(0);
  return out;
}

const cases: [string, number[][]][] = [
  [
    'ij,jk->ik',
    [
      [2, 3],
      [3, 4],
    ],
  ],
  [
    'bij,bjk->bik',
    [
      [2, 2, 3],
      [2, 3, 2],
    ],
  ],
  ['i,j->ij', [[3], [4]]],
  ['i,i->', [[5], [5]]],
  ['ii->', [[3, 3]]],
  ['ii->i', [[4, 4]]],
  ['iij->j', [[2, 2, 3]]],
  ['ij->ji', [[2, 3]]],
  ['ij->', [[2, 3]]],
  ['ijk->kj', [[2, 3, 4]]],
  [
    'ij,jk,kl->il',
    [
      [2, 3],
      [3, 2],
      [2, 4],
    ],
  ],
  [
    'bhqd,bhkd->bhqk',
    [
      [1, 2, 3, 4],
      [1, 2, 2, 4],
    ],
  ],
  [
    'ij,ij->i',
    [
      [3, 4],
      [3, 4],
    ],
  ],
  [
    'ab,cd->abcd',
    [
      [2, 1],
      [1, 3],
    ],
  ],
];

test('einsum matches the brute-force reference and its gradients check', () => {
  for (const [eq, shapes] of cases) {
    const xs = shapes.map((s) => rnd(s));
    close(values(fl.einsum(eq, ...xs)), ref(eq, ...xs), 1e-10, 1e-10, eq);
    assert.is(
      gradcheck((ts) => fl.einsum(eq, ...ts), xs),
      null,
      eq,
    );
  }
});

test('implicit outputs, spaces, ellipsis broadcasting, an operand array', () => {
  const a = rnd([2, 3]),
    b = rnd([3, 4]);
  close(values(fl.einsum('ij,jk', a, b)), ref('ij,jk->ik', a, b), 1e-12);
  close(values(fl.einsum(' ij , jk ', fl.zeros([2, 0], { dtype: 'f64' }), fl.zeros([0, 3], { dtype: 'f64' }))), [0, 0, 0, 0, 0, 0]);
  close(values(fl.einsum('ji', a)), values(a.transpose(0, 1)), 1e-12);
  const x = rnd([2, 1, 3, 4]),
    y = rnd([5, 4, 2]);
  const out = fl.einsum('...ij,...jk->...ik', x, y);
  assert.equal(out.shape, [2, 5, 3, 2]);
  close(values(out), values(fl.matmul(x, y)), 1e-12);
  const d = rnd([2, 3, 3]);
  close(values(fl.einsum('...ii->...i', d)), ref('bii->bi', d), 1e-12);
  close(values(fl.einsum('ij,jk->ik', [a, b] as never)), ref('ij,jk->ik', a, b), 1e-12);
});

test('einsum refuses what it cannot do, naming the equation', () => {
  const a = rnd([2, 3]);
  expectError(() => fl.einsum('ij,jk->ik', a), RangeError, 'ERR_SHAPE', /2 input terms/);
  expectError(() => fl.einsum('ijk->i', a), RangeError, 'ERR_SHAPE', /names 3 dims/);
  expectError(() => fl.einsum('ij,jk->ik', a, rnd([4, 2])), RangeError, 'ERR_SHAPE', /'j' has size 3 and 4/);
  expectError(() => fl.einsum('ij->iz', a), TypeError, 'ERR_ARG', /appears in no input/);
  expectError(() => fl.einsum('ij->ii', a), TypeError, 'ERR_ARG', /repeats/);
  expectError(() => fl.einsum('i1->i', a), TypeError, 'ERR_ARG', /not a letter/);
  expectError(() => fl.einsum('...i->i', rnd([2, 3])), TypeError, 'ERR_ARG', /must keep/);
  expectError(() => fl.einsum('ij,jk', a, fl.zeros([3, 2])), TypeError, 'ERR_DTYPE');
});

test.run();
