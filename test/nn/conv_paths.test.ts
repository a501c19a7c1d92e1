/**
 * The f32 convolution paths (cpp/cpu/conv.cc: image by image, or batched with one column matrix per
 * chunk) against the f64 path, whose values the PyTorch fixtures of conv.test.ts pin down: forward,
 * input and weight gradients of conv2d and convTranspose2d over strides, padding, dilation, groups,
 * 1×1 kernels, first-layer shapes (few input channels) and batches smaller than the thread count.
 * The parent run uses the automatic choice; it reruns this file with FLOCKML_CONV_ALGO=images,
 * =batched and =winograd (3×3 stride-1 layers, conv_winograd.cc) so every path meets the same
 * references, and checks an unknown value is refused.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';
import { assertFilePasses, runTsx } from '../helpers/rerun';

const F = fl.nn.functional;
const algo = process.env.FLOCKML_CONV_ALGO ?? 'auto';

interface Geom {
  n: number;
  c: number;
  h: number;
  w: number;
  oc: number;
  k: [number, number];
  options: { stride?: number | [number, number]; padding?: number | [number, number]; dilation?: number; groups?: number };
  bias: boolean;
}

const geoms: Geom[] = [
  { n: 4, c: 1, h: 28, w: 28, oc: 8, k: [3, 3], options: {}, bias: true }, // a first layer: kk < oc
  { n: 3, c: 8, h: 13, w: 11, oc: 16, k: [3, 3], options: { padding: 1 }, bias: true },
  { n: 2, c: 6, h: 12, w: 12, oc: 4, k: [3, 2], options: { stride: [2, 1], padding: [1, 0], dilation: 2, groups: 2 }, bias: false },
  { n: 3, c: 5, h: 9, w: 7, oc: 7, k: [1, 1], options: {}, bias: true }, // 1×1: the image is its own column matrix
  { n: 1, c: 4, h: 10, w: 10, oc: 6, k: [3, 3], options: { stride: 2 }, bias: true }, // fewer images than threads
  { n: 5, c: 40, h: 6, w: 6, oc: 33, k: [3, 3], options: { padding: 1 }, bias: false }, // K beyond one GEMM slice
  // Winograd F(2×2, 3×3) where chosen: odd output sizes (edge tiles cropped), padding 2 and 0,
  // a 1-pixel-high image, and more tiles than one block
  { n: 2, c: 17, h: 9, w: 14, oc: 19, k: [3, 3], options: { padding: [2, 0] }, bias: true },
  { n: 1, c: 16, h: 1, w: 3, oc: 16, k: [3, 3], options: { padding: 1 }, bias: true },
  { n: 3, c: 70, h: 20, w: 21, oc: 24, k: [3, 3], options: { padding: 1 }, bias: false },
  { n: 2, c: 64, h: 9, w: 10, oc: 65, k: [3, 3], options: { padding: 1 }, bias: true }, // wide: Winograd by default
];

const label = (g: Geom) => `${g.n}x${g.c}x${g.h}x${g.w} -> ${g.oc} k=${g.k} ${JSON.stringify(g.options)}`;

function run(dtype: 'f32' | 'f64', x0: fl.Tensor, w0: fl.Tensor, b0: fl.Tensor | null, r: fl.Tensor, transpose: boolean, g: Geom) {
  const x = x0.to(dtype).clone().requiresGrad_();
  const w = w0.to(dtype).clone().requiresGrad_();
  const b = b0 ? b0.to(dtype).clone().requiresGrad_() : null;
  const y = transpose
    ? F.convTranspose2d(x, w, b, {
        stride: g.options.stride,
        padding: g.options.padding,
        dilation: g.options.dilation,
        groups: g.options.groups,
      })
    : F.conv2d(x, w, b, g.options);
  y.mul(r.to(dtype)).sum().backward();
  const f = (t: fl.Tensor | null | undefined) => (t ? values(t) : []);
  return { y: f(y), gx: f(x.grad), gw: f(w.grad), gb: f(b?.grad) };
}

fl.manualSeed(3);
for (const g of geoms) {
  for (const transpose of [false, true]) {
    test(`${transpose ? 'convTranspose2d' : 'conv2d'} f32 (${algo}) matches f64: ${label(g)}`, () => {
      const groups = g.options.groups ?? 1;
      const x = fl.randn([g.n, g.c, g.h, g.w], { dtype: 'f64' });
      // conv2d weight [oc, c/g, kh, kw]; convTranspose2d weight [c, oc/g, kh, kw] (input channels first)
      const w = transpose
        ? fl.randn([g.c, g.oc / groups, ...g.k], { dtype: 'f64' })
        : fl.randn([g.oc, g.c / groups, ...g.k], { dtype: 'f64' });
      const b = g.bias ? fl.randn([g.oc], { dtype: 'f64' }) : null;
      const shape = (transpose ? F.convTranspose2d(x, w, b, g.options as never) : F.conv2d(x, w, b, g.options)).shape;
      const r = fl.randn([...shape], { dtype: 'f64' });
      const ref = run('f64', x, w, b, r, transpose, g),
        got = run('f32', x, w, b, r, transpose, g);
      close(got.y, ref.y, 1e-4, 1e-4, 'y');
      close(got.gx, ref.gx, 1e-4, 1e-4, 'grad x');
      close(got.gw, ref.gw, 1e-4, 1e-3, 'grad w');
      close(got.gb, ref.gb, 1e-4, 1e-3, 'grad b');
    });
  }
}

if (!process.env.FLOCKML_CONV_ALGO) {
  const child = (value: string, args: string[]) => runTsx({ FLOCKML_CONV_ALGO: value }, args);
  for (const value of ['images', 'batched', 'winograd'])
    test(`FLOCKML_CONV_ALGO=${value}: the same checks pass`, () => assertFilePasses(__filename, { FLOCKML_CONV_ALGO: value }));

  test('an unknown FLOCKML_CONV_ALGO is refused with ERR_ARG', () => {
    const script = `const fl = require('./lib');
try { fl.nn.functional.conv2d(fl.randn([2, 1, 5, 5]), fl.randn([2, 1, 3, 3])).toArray(); console.log('{}'); }
catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
    const r = child('winograd9', ['-e', script]);
    const line = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');
    assert.is(line.code, 'ERR_ARG', r.stdout + r.stderr);
    assert.match(line.message, /FLOCKML_CONV_ALGO=winograd9/);
  });
}

test.run();
