import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { native } from '../../lib/native';
import { assertFilePasses } from '../helpers/rerun';

/**
 * bf16 conv2d and its two gradients (bf16 im2col + the AVX512_BF16 GEMM where the CPU has it, else
 * widened to f32): every result must be the f64 convolution of the same bf16 values rounded once to
 * bf16 (relative error at most 2^-8 of the value, plus a little for the order of the f32 sums).
 * The parent run takes the automatic choice of path (image by image when there are at least as many
 * images as threads); it reruns this file with FLOCKML_CONV_ALGO=images and =batched.
 */
const F = fl.nn.functional;
type Opts = {
  stride?: number | [number, number];
  padding?: number | [number, number];
  dilation?: number | [number, number];
  groups?: number;
};

interface Case {
  name: string;
  x: number[];
  w: number[];
  bias: boolean;
  opts: Opts;
}

const cases: Case[] = [
  { name: '3x3, padding 1, bias', x: [3, 4, 9, 7], w: [6, 4, 3, 3], bias: true, opts: { padding: 1 } },
  { name: 'odd column rows (3 channels of 1x3: an unpaired K)', x: [2, 3, 5, 8], w: [5, 3, 1, 3], bias: false, opts: {} },
  {
    name: 'stride 2, dilation 2, groups 2, padding [2,1]',
    x: [2, 6, 11, 10],
    w: [4, 3, 3, 2],
    bias: true,
    opts: { stride: 2, dilation: 2, groups: 2, padding: [2, 1] },
  },
  { name: '1x1, stride [1,2]', x: [4, 8, 6, 6], w: [16, 8, 1, 1], bias: true, opts: { stride: [1, 2] } },
  { name: 'one image, one channel (the Fashion-MNIST CNN first layer)', x: [1, 1, 28, 28], w: [32, 1, 3, 3], bias: true, opts: {} },
  // Image by image: a first layer (kk < oc: the transposed weight gradient), odd pixel counts (a
  // zero pixel pads the weight gradient's K pairs), a 1×1 stride-1 kernel (images are their own
  // columns), output channels off the 8-row blocks.
  { name: 'first layer, 4 images', x: [4, 1, 28, 28], w: [32, 1, 3, 3], bias: true, opts: {} },
  { name: 'odd pixel count, 13 output channels', x: [3, 5, 11, 13], w: [13, 5, 3, 3], bias: true, opts: {} },
  { name: '1x1 stride 1, groups 2', x: [3, 8, 5, 7], w: [6, 4, 1, 1], bias: true, opts: { groups: 2 } },
  // ~2 MB of columns and products per image, chunks of 15 images: 20 images take two chunks.
  { name: 'chunked batch', x: [20, 16, 48, 48], w: [8, 16, 3, 3], bias: true, opts: { padding: 1 } },
];

/** Max over elements of |got − want| / (|want| + scale · 2^-6), with scale the largest |want|. */
async function relErr(got: fl.Tensor, want: fl.Tensor): Promise<number> {
  const g = await got.to('f64').data(),
    w = await want.data();
  let scale = 0;
  for (const v of w) scale = Math.max(scale, Math.abs(Number(v)));
  let worst = 0;
  for (let i = 0; i < w.length; i++) {
    const d = Math.abs(Number(g[i]) - Number(w[i])) / (Math.abs(Number(w[i])) + scale * 2 ** -6);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

for (const c of cases) {
  test(`bf16 conv2d ${c.name}: forward, input and weight gradients (${native.buildInfo().bf16gemm})`, async () => {
    fl.manualSeed(c.x.reduce((a, b) => a * 7 + b, 1));
    const x = fl.randn(c.x).to('bf16').requiresGrad_();
    const w = fl.randn(c.w).to('bf16').requiresGrad_();
    const b = c.bias ? fl.randn([c.w[0]]).to('bf16').requiresGrad_() : null;
    const y = F.conv2d(x, w, b, c.opts);
    assert.is(y.dtype, 'bf16');
    const gy = fl.randn([...y.shape]).to('bf16');
    y.backward(gy);

    const x64 = x.detach().to('f64').requiresGrad_();
    const w64 = w.detach().to('f64').requiresGrad_();
    const b64 = b ? b.detach().to('f64').requiresGrad_() : null;
    const y64 = F.conv2d(x64, w64, b64, c.opts);
    y64.backward(gy.to('f64'));

    // The bias gradient is gy.sum([0, 2, 3]): a bf16 reduction in f32 over all three dims, rounded once.
    const bound = 2 ** -8 + 2 ** -12;
    const checks: [string, fl.Tensor, fl.Tensor][] = [
      ['output', y, y64],
      ['input gradient', x.grad!, x64.grad!],
      ['weight gradient', w.grad!, w64.grad!],
    ];
    if (b && b64) checks.push(['bias gradient', b.grad!, b64.grad!]);
    for (const [what, got, want] of checks) {
      assert.is(got.dtype, 'bf16', what);
      const err = await relErr(got, want);
      assert.ok(err <= bound, `${what}: relative error ${err} > ${bound}`);
    }
  });
}

test('bf16 conv2d of a zero-size batch, and mixed dtypes refused', () => {
  const w = fl.randn([4, 2, 3, 3]).to('bf16');
  assert.equal(F.conv2d(fl.zeros([0, 2, 5, 5]).to('bf16'), w).shape, [0, 4, 3, 3]);
  assert.throws(
    () => F.conv2d(fl.zeros([1, 2, 5, 5]), w),
    (e: Error & { code?: string }) => e.code === 'ERR_DTYPE',
  );
});

if (!process.env.FLOCKML_CONV_ALGO)
  for (const value of ['images', 'batched'])
    test(`FLOCKML_CONV_ALGO=${value}: the same checks pass`, () => assertFilePasses(__filename, { FLOCKML_CONV_ALGO: value }));

test.run();
