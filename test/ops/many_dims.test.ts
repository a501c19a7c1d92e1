/**
 * Tensors of more dims than a shape holds inline (cpp/shape.h keeps 8 in the object and moves
 * longer ones to the heap): broadcasting, permute, reductions, reshape, unsqueeze and cat on 9 to
 * 12 dims, each against a reference computed here from flat indices.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';

const strides = (shape: number[]) => {
  const st = shape.map(() => 1);
  for (let i = shape.length - 2; i >= 0; i--) st[i] = st[i + 1] * shape[i + 1];
  return st;
};
const unravel = (flat: number, shape: number[]) => strides(shape).map((s, d) => Math.floor(flat / s) % shape[d]);
const ravel = (idx: number[], shape: number[]) => idx.reduce((acc, v, d) => acc + v * strides(shape)[d], 0);
const SHAPE = [2, 1, 2, 3, 1, 2, 1, 2, 1, 3];
const numel = SHAPE.reduce((a, b) => a * b, 1);

fl.manualSeed(3);

test('10-d broadcasting add against a [3] and a 10-d [2,1,...] operand', () => {
  const x = fl.randn(SHAPE);
  const b = fl.randn([3]);
  const c = fl.randn([2, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
  const out = x.add(b).add(c);
  assert.equal(out.shape, SHAPE);
  const xv = values(x),
    bv = values(b),
    cv = values(c);
  const ref = xv.map((v, i) => v + bv[unravel(i, SHAPE)[9]] + cv[unravel(i, SHAPE)[0]]);
  close(values(out), ref, 1e-6, 1e-6, 'add');
});

test('permute of 10 dims (reversed) and back', () => {
  const x = fl.randn(SHAPE);
  const perm = SHAPE.map((_, i) => SHAPE.length - 1 - i);
  const p = x.permute(perm);
  const pshape = perm.map((d) => SHAPE[d]);
  assert.equal(p.shape, pshape);
  const xv = values(x);
  const ref = Array.from({ length: numel }, (_, i) => {
    const idx = unravel(i, pshape);
    const src = SHAPE.map((_, d) => idx[perm.indexOf(d)]);
    return xv[ravel(src, SHAPE)];
  });
  assert.equal(values(p), ref);
  assert.equal(values(p.permute(perm)), xv);
});

test('sum over dims 0, 3 and 9 of a 10-d tensor, keepdim and not', () => {
  const x = fl.randn(SHAPE);
  const dims = [0, 3, 9];
  const kept = x.sum(dims, true);
  const kshape = SHAPE.map((s, d) => (dims.includes(d) ? 1 : s));
  assert.equal(kept.shape, kshape);
  const ref = new Array(kshape.reduce((a, b) => a * b, 1)).fill(0);
  values(x).forEach((v, i) => {
    const idx = unravel(i, SHAPE).map((v2, d) => (dims.includes(d) ? 0 : v2));
    ref[ravel(idx, kshape)] += v;
  });
  close(values(kept), ref, 1e-5, 1e-5, 'keepdim');
  const dropped = x.sum(dims);
  assert.equal(
    dropped.shape,
    SHAPE.filter((_, d) => !dims.includes(d)),
  );
  close(values(dropped), ref, 1e-5, 1e-5, 'dropped');
});

test('reshape to 12 dims and back, unsqueeze past 10, cat along the last of 11 dims, gradients through them', () => {
  const x = fl.randn(SHAPE).requiresGrad_();
  const twelve = [2, 1, 1, 2, 3, 1, 1, 2, 1, 2, 1, 3];
  const r = x.reshape(twelve);
  assert.equal(r.shape, twelve);
  assert.equal(values(r), values(x));
  const u = x.unsqueeze(10);
  assert.equal(u.shape, [...SHAPE, 1]);
  const c = fl.cat([u, u.mul(2)], 10);
  assert.equal(c.shape, [...SHAPE, 2]);
  const cv = values(c),
    xv = values(x);
  for (let i = 0; i < numel; i++) {
    assert.is(cv[2 * i], xv[i]);
    close([cv[2 * i + 1]], [2 * xv[i]], 1e-6, 1e-6, 'cat');
  }
  c.sum().add(r.sum()).backward();
  close(values(x.grad!), new Array(numel).fill(4), 1e-6, 1e-6, 'grad');
});

test.run();
