/**
 * GPT-mini: a decoder-only character model trained on the fortunes of Debian's `fortunes` package.
 * 4 layers, 4 heads, d_model 128, context 128, learned positions, pre-norm, GELU, tied input and
 * output embeddings; AdamW (betas 0.9/0.95, weight decay 0.1) with linear warm-up and cosine
 * decay, gradient clipping at 1, a 90/10 train/validation split, then a sample (top-k sampling).
 *   npm run example:gpt -- --steps 200 [--batch 32] [--lr 1e-3] [--seed 0] [--threads N]
 *                          [--autocast bf16] [--no-sample]
 * --autocast bf16 runs forward and loss under fl.autocast({ dtype: 'bf16', device: 'cpu' }).
 * Under `flockml launch` (RANK and WORLD_SIZE set) it trains with DistributedDataParallel, each
 * rank taking its slice of every global batch of --batch rows; rank 0 evaluates and prints.
 *   npx flockml launch --nproc-per-node 2 examples/gpt_mini.ts --steps 200
 * The last line is {"example":"gpt-mini","steps":…,"val_loss":…,"tokens_per_s":…} (tokens of the
 * global batch per second). bench/anchors/torch_gpt_mini.py is the same recipe in PyTorch.
 */
import * as fl from '../lib';
import { GptMini } from './gpt/model';
import { batchStarts, rankSlice, windows } from './gpt/data';
import { generate } from './gpt/generate';

export { GptMini, type GptConfig } from './gpt/model';
export { batchStarts, windows } from './gpt/data';
export { generate, type GenerateOptions } from './gpt/generate';

const { nn } = fl;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`--${name} must be a non-negative number, got ${process.argv[i + 1]}`);
  return v;
}

function autocastArg(): 'bf16' | 'f16' | null {
  const i = process.argv.indexOf('--autocast');
  if (i < 0) return null;
  const v = process.argv[i + 1];
  if (v !== 'bf16' && v !== 'f16') throw new RangeError(`--autocast must be bf16 or f16, got ${v}`);
  return v;
}

async function main(): Promise<void> {
  const steps = arg('steps', 200);
  const batch = arg('batch', 32);
  const lr = arg('lr', 1e-3);
  const seed = arg('seed', 0);
  const evalBatches = arg('eval-batches', 8);
  const lowp = autocastArg();
  if (process.argv.includes('--threads')) fl.setNumThreads(arg('threads', 2));
  const distributed = process.env.WORLD_SIZE !== undefined;
  const pg = distributed ? await fl.distributed.initProcessGroup({ backend: 'ring' }) : null;
  const rank = pg?.rank ?? 0;
  const world = pg?.size ?? 1;
  const context = 128;
  const text = fl.data.fortunesCorpus();
  const tok = fl.data.CharTokenizer.fit(text);
  const all = tok.encode(text);
  const split = Math.floor(all.length * 0.9);
  const train = all.subarray(0, split);
  const val = all.subarray(split);
  fl.manualSeed(seed); // every rank builds the same model (DDP broadcasts rank 0's anyway)
  const model = new GptMini({ vocab: tok.vocabSize, context, dModel: 128, heads: 4, layers: 4, dropout: 0 });
  const ddp = pg ? await fl.parallel.DistributedDataParallel.create(model, (x: fl.Tensor) => model.forward(x)) : null;
  const forward = (x: fl.Tensor) => (ddp ? ddp.forward(x) : model.forward(x));
  const decay = model.parameters().filter((p) => p.ndim >= 2);
  const noDecay = model.parameters().filter((p) => p.ndim < 2);
  const opt = new fl.optim.AdamW(
    [
      { params: decay, weightDecay: 0.1 },
      { params: noDecay, weightDecay: 0 },
    ],
    { lr, betas: [0.9, 0.95] },
  );
  const warmup = Math.max(1, Math.min(100, Math.floor(steps / 10)));
  const sched = new fl.optim.ChainedScheduler([
    new fl.optim.LinearWarmup(opt, warmup, 1 / warmup, 1),
    new fl.optim.CosineAnnealingLR(opt, Math.max(1, steps), lr / 10),
  ]);
  // The loss of a batch, under autocast when asked (the loss itself in f32, as autocast's policy says).
  const lossOf = (x: fl.Tensor, y: fl.Tensor, f: (x: fl.Tensor) => fl.Tensor) => {
    const run = () => nn.functional.crossEntropy(f(x).reshape([-1, tok.vocabSize]), y.reshape([-1]));
    return lowp ? fl.autocast({ dtype: lowp, device: 'cpu' }, run) : run();
  };
  const bar = fl.utils.progress(
    Array.from({ length: steps }, (_, i) => i),
    { desc: 'gpt-mini', rank0Only: true },
  );
  let trained = 0;
  const started = performance.now();
  for (const s of bar) {
    const starts = rankSlice(batchStarts(s, batch, train.length - context - 1), rank, world);
    const [x, y] = windows(train, starts, context);
    const loss = fl.tidy(() => {
      const l = lossOf(x, y, forward);
      opt.zeroGrad();
      l.backward();
      return l;
    });
    if (ddp) await ddp.syncGradients();
    fl.tidy(() => {
      fl.optim.clipGradNorm_(model.parameters(), 1.0);
      opt.step();
    });
    sched.step();
    trained += batch * context;
    if (s % 10 === 0 || s === steps - 1) bar.setPostfix({ loss: await loss.item() });
    loss.dispose();
    x.dispose();
    y.dispose();
  }
  await fl.sync();
  const seconds = (performance.now() - started) / 1000;
  if (rank === 0) {
    // Validation: evenly spaced windows of the held-out tail, the same in every framework.
    model.eval();
    const range = val.length - context - 1;
    let valLoss = 0;
    for (let b = 0; b < evalBatches; b++) {
      const starts = Array.from({ length: batch }, (_, r) => Math.floor(((b * batch + r) * range) / (evalBatches * batch)));
      const [x, y] = windows(val, starts, context);
      valLoss += await fl.noGrad(() => fl.tidy(() => lossOf(x, y, (t) => model.forward(t)))).item();
      x.dispose();
      y.dispose();
    }
    valLoss /= Math.max(1, evalBatches);
    if (!process.argv.includes('--no-sample')) {
      const prompt = fl.tensor(BigInt64Array.from(tok.encode('The '), BigInt), { shape: [1, 4] });
      const sample = generate(model, prompt, { maxNewTokens: 200, temperature: 0.8, topK: 10, seed: 12345 });
      console.log(`--- sample ---\n${tok.decode(await sample.data())}\n---`);
    }
    console.log(
      JSON.stringify({
        example: 'gpt-mini',
        steps,
        val_loss: Number(valLoss.toFixed(4)),
        tokens_per_s: Math.round(trained / seconds),
        ...(world > 1 ? { ranks: world } : {}),
        ...(lowp ? { autocast: lowp } : {}),
      }),
    );
  }
  if (pg) await fl.distributed.destroyProcessGroup();
}

if (require.main === module)
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
