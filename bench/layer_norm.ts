/**
 * LayerNorm forward + backward over x [rows, d] with weight and bias (all requiring grad).
 * `fused` runs F.layerNorm, whose kernel applies the affine and produces dweight/dbias itself;
 * the anchor `unfused` is the composition flockml ran before: the kernel without an affine, then
 * .mul(weight).add(bias) as separate ops (and their gradients, including the column sums).
 * Prints one JSON line per variant: {"bench":"layer_norm","variant":…,"rows":…,"d":…,"ms":…,"ms_min":…}: the
 * median and the fastest of ROUNDS (default 7) rounds of 5 steps, the variants alternating round by round.
 * Usage: npm run bench -- layer_norm [rows] [d] [device]
 */
import * as fl from '../lib/index';

const F = fl.nn.functional;

async function main(): Promise<void> {
  const [rowsArg, dArg, deviceArg] = process.argv.slice(2);
  const rows = Number(rowsArg ?? 4096),
    d = Number(dArg ?? 1024),
    device = deviceArg ?? 'cpu';
  fl.manualSeed(0);
  const x = fl.randn([rows, d], { device }).requiresGrad_();
  const w = fl.randn([d], { device }).requiresGrad_();
  const b = fl.randn([d], { device }).requiresGrad_();
  const gy = fl.randn([rows, d], { device });
  const variants: Record<string, () => fl.Tensor> = {
    fused: () => F.layerNorm(x, [d], w, b),
    unfused: () => F.layerNorm(x, [d]).mul(w).add(b),
  };
  const step = (f: () => fl.Tensor) =>
    fl.tidy(() => {
      f().backward(gy);
      for (const p of [x, w, b]) p.grad = null;
    });
  const run = async (f: () => fl.Tensor, iters: number) => {
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) step(f);
    await fl.sync(device);
    return (performance.now() - t0) / iters;
  };
  const times: Record<string, number[]> = {};
  for (const [variant, f] of Object.entries(variants)) {
    await run(f, 3); // warm-up: allocator, thread pool, page faults
    times[variant] = [];
  }
  // Rounds alternate between the variants, so a busy spell on a shared machine hits both alike.
  const rounds = Number(process.env.ROUNDS ?? 7);
  for (let r = 0; r < rounds; r++) for (const [variant, f] of Object.entries(variants)) times[variant].push(await run(f, 5));
  for (const [variant, ts] of Object.entries(times)) {
    const sorted = [...ts].sort((p, q) => p - q);
    const ms = sorted[Math.floor(sorted.length / 2)];
    console.log(
      JSON.stringify({
        bench: 'layer_norm',
        variant,
        device,
        rows,
        d,
        threads: fl.getNumThreads(),
        ms: +ms.toFixed(3),
        ms_min: +sorted[0].toFixed(3),
      }),
    );
  }
}

void main();
