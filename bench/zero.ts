/**
 * ZeRO stages on the Fashion-MNIST CNN (batch 64 per rank, Adam, synthetic inputs) on N local
 * ranks (ring backend), DDP with `zeroStage` 1, 2 and 3 against plain DDP in the same command
 * (the anchor, stage 0): median step
 * time, and per rank the bytes held between steps (parameters + gradients + optimizer state:
 * what ZeRO shards) and the peak (activations included).
 * Prints JSON lines {"bench":"zero","stage":…,"ranks":…,"ms_per_step":…,"resident_mb":…,
 * "peak_mb":…,"resident_vs_ddp":…}.
 *   npm run bench -- zero [--ranks N] [--steps S]
 * This file is also the rank's program: the launcher starts it with ZERO_BENCH_STAGE set.
 */
import * as fl from '../lib';
import { cnn } from '../examples/common';
import { launch } from '../lib/distributed/launch';
import { stringFlag } from './shared/args';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : 0;
}

async function rank(stage: number, steps: number): Promise<void> {
  const pg = await fl.distributed.initProcessGroup({ backend: 'ring' });
  fl.setNumThreads(Math.max(1, Math.floor(fl.getNumThreads() / pg.size)));
  fl.manualSeed(0);
  const model = cnn();
  const x = fl.randn([64, 1, 28, 28]),
    y = fl.randint(0, 10, [64]);
  let step: () => Promise<void>;
  {
    const ddp = await fl.parallel.DistributedDataParallel.create(
      model,
      (t: fl.Tensor) => model.forward(t),
      stage === 3 ? { zeroStage: 3 } : { bucketCapMB: 0.25, zeroStage: stage as 0 | 1 | 2 },
    );
    const plain = stage === 0 ? new fl.optim.Adam(model.parameters(), { lr: 1e-3 }) : null;
    const zero = stage === 0 ? null : new fl.parallel.ZeroRedundancyOptimizer(ddp, fl.optim.Adam, { lr: 1e-3 });
    step = async () => {
      // Gradients are zeroed before backward, so each stage holds what it keeps of them between steps.
      plain?.zeroGrad();
      zero?.zeroGrad();
      fl.tidy(() => fl.nn.functional.crossEntropy(ddp.forward(x), y).backward());
      await ddp.syncGradients();
      if (plain) fl.tidy(() => plain.step());
      else await zero!.step();
    };
  }
  const times: number[] = [];
  for (let s = 0; s < steps + 3; s++) {
    const t0 = performance.now();
    await step();
    await fl.sync();
    if (s >= 3) times.push(performance.now() - t0);
  }
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  await new Promise((r) => setTimeout(r, 50)); // finalizers run after the collection
  await fl.sync();
  const mem = fl.memory().cpu;
  // Inputs are the same for every stage; what remains is the model's state on this rank.
  const resident = mem.bytes - x.numel() * 4 - y.numel() * 8;
  const all = fl.tensor([median(times), resident, mem.peakBytes], { dtype: 'f64' });
  await pg.allReduce(all, { op: 'max' }).wait();
  const [ms, res, peak] = Array.from(await all.data(), Number);
  if (pg.rank === 0) console.log(JSON.stringify({ stage, ranks: pg.size, ms_per_step: ms, resident_bytes: res, peak_bytes: peak }));
  await fl.distributed.destroyProcessGroup();
}

async function main(): Promise<void> {
  const ranks = Number(stringFlag('ranks', '2'));
  const steps = stringFlag('steps', '20');
  const rows: Array<{ stage: number; ms_per_step: number; resident_bytes: number; peak_bytes: number }> = [];
  for (const stage of [0, 1, 2, 3]) {
    let out = '';
    const code = await launch({
      script: __filename,
      nprocPerNode: ranks,
      masterPort: 20000 + Math.floor(Math.random() * 10000),
      // --expose-gc: tensors that only the garbage collector frees (FSDP's autograd closures) are
      // collected before the bytes are read, so garbage is not counted as state.
      env: { ZERO_BENCH_STAGE: String(stage), ZERO_BENCH_STEPS: steps, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc` },
      stdout: { write: (s: string) => (out += s) } as unknown as NodeJS.WritableStream,
    });
    if (code !== 0) {
      process.stderr.write(out);
      process.exit(code);
    }
    const line = out.split('\n').find((l) => l.includes('"resident_bytes"'));
    rows.push(JSON.parse(line!.replace(/^\[\d+\] /, '')));
  }
  const ddp = rows[0];
  for (const r of rows)
    console.log(
      JSON.stringify({
        bench: 'zero',
        stage: r.stage,
        ranks,
        ms_per_step: Number(r.ms_per_step.toFixed(2)),
        resident_mb: Number((r.resident_bytes / 2 ** 20).toFixed(3)),
        peak_mb: Number((r.peak_bytes / 2 ** 20).toFixed(2)),
        resident_vs_ddp: Number((r.resident_bytes / ddp.resident_bytes).toFixed(3)),
        ms_vs_ddp: Number((r.ms_per_step / ddp.ms_per_step).toFixed(2)),
      }),
    );
}

if (process.env.ZERO_BENCH_STAGE !== undefined)
  rank(Number(process.env.ZERO_BENCH_STAGE), Number(process.env.ZERO_BENCH_STEPS ?? 20)).catch((e) => {
    console.error(e);
    process.exit(1);
  });
else void main();
