/**
 * view() follows PyTorch's stride rule (lib/ops/strides.ts computeStride): on views whose strides
 * PyTorch would make non-contiguous (transpose, permute, narrow, expand, select), every shape
 * PyTorch views gives PyTorch's strides and every shape it refuses throws ERR_SHAPE with its
 * message; reshape() and contiguous() still work. Golden values: test/fixtures/view_strides.json
 * (made by test/fixtures/make_view_strides_fixtures.py with torch 1.13).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

type Case = { shape: number[]; stride: number[]; views: [number[], number[] | null][] };
const golden: Record<string, Case> = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'view_strides.json'), 'utf8'));

const x = fl.arange(24).reshape(2, 3, 4);
const make: Record<string, () => fl.Tensor> = {
  'transpose(1,2)': () => x.transpose(1, 2),
  'permute(2,0,1)': () => x.permute([2, 0, 1]),
  'narrow(2,1,2)': () => x.narrow(2, 1, 2),
  'narrow(0,1,1)': () => x.narrow(0, 1, 1),
  expand: () => x.narrow(1, 0, 1).expand([2, 5, 4]),
  'select(1,1)': () => x.select(1, 1),
  T2: () => x.select(0, 0).T,
};

for (const [name, c] of Object.entries(golden)) {
  test(`${name}: PyTorch's strides, and view accepts and refuses what PyTorch's does`, () => {
    const t = make[name]();
    assert.equal(t.shape, c.shape);
    assert.equal(t.stride(), c.stride);
    const values = Array.from(t.dataSync() as Float32Array);
    for (const [shape, stride] of c.views) {
      if (stride === null) {
        assert.throws(
          () => t.view(shape),
          (e: { code?: string; message: string }) =>
            e.code === 'ERR_SHAPE' &&
            /view size is not compatible with input tensor's size and stride/.test(e.message) &&
            /Use \.reshape\(\.\.\.\) instead/.test(e.message),
          `view(${shape}) must throw`,
        );
        const r = t.reshape(shape);
        assert.equal(Array.from(r.dataSync() as Float32Array), values, `reshape(${shape}) keeps the values`);
        assert.ok(r.isContiguous(), `reshape(${shape}) that cannot view copies`);
      } else {
        const v = t.view(shape);
        assert.equal(v.stride(), stride, `view(${shape}) strides`);
        assert.equal(Array.from(v.dataSync() as Float32Array), values, `view(${shape}) values`);
      }
    }
    assert.equal(t.contiguous().view(-1).shape, [values.length]);
  });
}

test('the classic attention reshape: transpose then view throws, contiguous() first works, gradients flow', () => {
  const y = fl.randn([2, 4, 3, 5]).requiresGrad_(); // [B, heads, T, d]
  assert.throws(
    () => y.transpose(1, 2).view(2, 3, 20),
    (e: { code?: string }) => e.code === 'ERR_SHAPE',
  );
  const out = y.transpose(1, 2).contiguous().view(2, 3, 20);
  assert.ok(out.isContiguous());
  out.mul(2).sum().backward();
  assert.equal(Array.from(y.grad?.dataSync() as Float32Array), new Array(120).fill(2));
  // Computed results are contiguous, and so is a plain tensor.
  assert.ok(y.transpose(1, 2).add(1).isContiguous());
  assert.equal(fl.zeros([2, 3]).stride(), [3, 1]);
  assert.is(fl.zeros([2, 3]).stride(-1), 1);
});

test.run();
