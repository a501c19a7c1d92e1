/**
 * CPU conv2d per algorithm (cpp/cpu/conv.cc): forward, input gradient and weight gradient of the
 * Fashion-MNIST CNN's two layers (batch 64) and a wider 3×3 and 1×1 layer, each timed under
 * FLOCKML_CONV_ALGO=images, =batched and =winograd in separate processes that alternate round by
 * round. Winograd F(2×2, 3×3) covers the forward and input gradient of 3×3 stride-1 layers; where it
 * does not apply (`winograd: false`) its column is the automatic choice. A fourth process runs the same
 * layers on bf16 tensors (the automatic path: cpp/cpu/conv_bf16.cc with AVX512_BF16, else widened to
 * f32). One JSON line per layer and pass: the medians (ms per call), GFLOP/s (direct-convolution
 * FLOPs over time), and the ratios to images.
 *   npm run bench -- conv [--rounds R] [--iters N]
 */
import { spawnSync } from 'node:child_process';
import * as fl from '../lib';
import { median } from './anchors/serve';
import { numberFlag } from './shared/args';

const argv = process.argv.slice(2);
const rounds = numberFlag('rounds', 5),
  iters = numberFlag('iters', 20);

// [name, N, C, H, W, OC, K, padding]
const layers: [string, number, number, number, number, number, number, number][] = [
  ['cnn-conv1', 64, 1, 28, 28, 32, 3, 0],
  ['cnn-conv2', 64, 32, 13, 13, 64, 3, 0],
  ['3x3-128', 32, 128, 14, 14, 128, 3, 1],
  ['1x1-256', 32, 256, 14, 14, 256, 1, 0],
];
const passes = ['forward', 'input-grad', 'weight-grad'] as const;

/** One round in this process: ms per call for each layer and pass. */
async function child(): Promise<void> {
  const F = fl.nn.functional;
  const dtype = argv.includes('--bf16') ? 'bf16' : 'f32';
  const out: Record<string, number> = {};
  for (const [name, n, c, h, w, oc, k, padding] of layers) {
    const x = fl.randn([n, c, h, w]).to(dtype).requiresGrad_();
    const wt = fl.randn([oc, c, k, k]).to(dtype).requiresGrad_();
    const b = fl.randn([oc]).to(dtype).requiresGrad_();
    for (const pass of passes) {
      const once = () =>
        fl.tidy(() => {
          const xi = pass === 'input-grad' ? x : x.detach();
          const wi = pass === 'weight-grad' ? wt : wt.detach();
          const y = F.conv2d(xi, wi, pass === 'forward' ? b.detach() : null, { padding });
          if (pass !== 'forward') y.sum().backward();
        });
      once();
      await fl.sync();
      const t0 = performance.now();
      for (let i = 0; i < iters; i++) once();
      await fl.sync();
      out[`${name} ${pass}`] = (performance.now() - t0) / iters;
    }
  }
  console.log(JSON.stringify(out));
}

function flops(name: string, pass: string): number {
  const [, n, c, h, w, oc, k, padding] = layers.find((l) => l[0] === name) ?? layers[0];
  const oh = h + 2 * padding - k + 1,
    ow = w + 2 * padding - k + 1;
  // forward 2·N·OC·OHW·C·K²; each backward pass adds the same again (a sum's gradient is free)
  return (pass === 'forward' ? 1 : 2) * 2 * n * oc * oh * ow * c * k * k;
}

async function main(): Promise<void> {
  if (argv.includes('--child')) return child();
  const algos = ['images', 'batched', 'winograd', 'bf16'] as const;
  const times: Record<string, Record<string, number[]>> = { images: {}, batched: {}, winograd: {}, bf16: {} };
  for (let r = 0; r < rounds; r++)
    for (const algo of algos) {
      const bf16 = algo === 'bf16';
      const res = spawnSync(
        process.execPath,
        [...process.execArgv, __filename, '--child', '--iters', String(iters), ...(bf16 ? ['--bf16'] : [])],
        {
          encoding: 'utf8',
          env: { ...process.env, FLOCKML_CONV_ALGO: bf16 ? 'auto' : algo },
        },
      );
      if (res.status !== 0) throw new Error(`conv bench child (${algo}) failed: ${res.stderr}`);
      const line = JSON.parse(res.stdout.trim().split('\n').pop() ?? '{}') as Record<string, number>;
      for (const [key, ms] of Object.entries(line)) (times[algo][key] ??= []).push(ms);
    }
  for (const key of Object.keys(times.images)) {
    const [layer, pass] = key.split(' ');
    const im = median(times.images[key]),
      ba = median(times.batched[key]),
      wi = median(times.winograd[key]),
      bf = median(times.bf16[key]);
    const [, , , , , , k] = layers.find((l) => l[0] === layer) ?? layers[0];
    const gf = (ms: number) => +(flops(layer, pass) / (ms * 1e6)).toFixed(1);
    console.log(
      JSON.stringify({
        bench: 'conv',
        layer,
        pass,
        isa: fl.buildInfo().cpuIsa,
        threads: fl.getNumThreads(),
        rounds,
        images_ms: +im.toFixed(3),
        batched_ms: +ba.toFixed(3),
        winograd_ms: +wi.toFixed(3),
        bf16_ms: +bf.toFixed(3),
        images_gflops: gf(im),
        batched_gflops: gf(ba),
        winograd_gflops: gf(wi),
        bf16_gflops: gf(bf),
        batched_over_images: +(ba / im).toFixed(3),
        winograd_over_images: +(wi / im).toFixed(3),
        bf16_over_images: +(bf / im).toFixed(3),
        bf16_path: fl.buildInfo().bf16gemm,
        winograd: k === 3 && pass !== 'weight-grad',
      }),
    );
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
