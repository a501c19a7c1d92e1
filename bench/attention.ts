/**
 * Fused scaledDotProductAttention against the unfused composition (matmul → mask → softmax →
 * matmul) on the CPU: peak memory added by one causal forward + backward (fl.memory().cpu, measured
 * in a fresh process per variant with T ascending, so each run sets a new high-water mark) and
 * the time of one step, for T = 256 … 2048 (batch 1, 4 heads, head size 32, f32).
 *   npm run bench -- attention [--variant fused|unfused]
 */
import { spawnSync } from 'node:child_process';
import * as fl from '../lib';

const argv = process.argv.slice(2);
const variant = argv.includes('--variant') ? argv[argv.indexOf('--variant') + 1] : null;
const SIZES = [256, 512, 1024, 2048];

function unfused(q: fl.Tensor, k: fl.Tensor, v: fl.Tensor): fl.Tensor {
  const t = q.shape[2];
  const upper = Uint8Array.from({ length: t * t }, (_, e) => Number(e % t > Math.floor(e / t)));
  const s = q.matmul(k.transpose(-2, -1)).mul(1 / Math.sqrt(q.shape[3]));
  return fl.softmax(s.maskedFill(fl.tensor(upper, { dtype: 'bool', shape: [t, t] }), -Infinity), -1).matmul(v);
}

async function measure(which: string): Promise<void> {
  for (const t of SIZES) {
    const [q, k, v] = [0, 1, 2].map(() => fl.randn([1, 4, t, 32]).requiresGrad_());
    await fl.sync();
    const live = fl.memory().cpu.bytes;
    const started = performance.now();
    const out = which === 'fused' ? fl.nn.functional.scaledDotProductAttention(q, k, v, { isCausal: true }) : unfused(q, k, v);
    out.sum().backward();
    await fl.sync();
    const ms = performance.now() - started;
    const peak = fl.memory().cpu.peakBytes - live;
    console.log(
      JSON.stringify({ bench: 'attention', variant: which, t, peak_mib: Number((peak / 2 ** 20).toFixed(3)), ms: Number(ms.toFixed(2)) }),
    );
    for (const x of [q, k, v, out]) x.dispose();
  }
}

if (variant) {
  measure(variant).catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  for (const v of ['fused', 'unfused'])
    spawnSync(process.execPath, [...process.execArgv, __filename, '--variant', v], { stdio: 'inherit' });
}
