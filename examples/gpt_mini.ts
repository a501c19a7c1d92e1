/**
 * GPT-mini: a decoder-only character model trained on the fortunes of Debian's `fortunes` package.
 * 4 layers, 4 heads, d_model 128, context 128, learned positions, pre-norm, GELU, tied input and
 * output embeddings; AdamW (betas 0.9/0.95, weight decay 0.1) with linear warm-up and cosine
 * decay, gradient clipping at 1, a 90/10 train/validation split, then a sample.
 *   npm run example:gpt -- --steps 200 [--batch 32] [--lr 1e-3] [--seed 0] [--threads N]
 * bench/anchors/torch_gpt_mini.py is the same model, data order, initialisation and recipe in PyTorch.
 */
import * as fl from '../lib';

const { nn } = fl;

export interface GptConfig {
  vocab: number;
  context: number;
  dModel: number;
  heads: number;
  layers: number;
  dropout: number;
}

export class GptMini extends nn.Module {
  tok: fl.nn.Embedding;
  pos: fl.nn.Embedding;
  blocks: fl.nn.TransformerEncoder;
  ln_f: fl.nn.LayerNorm;
  head: fl.nn.Linear;

  constructor(readonly cfg: GptConfig) {
    super();
    this.tok = new nn.Embedding(cfg.vocab, cfg.dModel);
    this.pos = new nn.Embedding(cfg.context, cfg.dModel);
    const layer = new nn.TransformerEncoderLayer(cfg.dModel, cfg.heads, {
      dimFeedforward: 4 * cfg.dModel,
      dropout: cfg.dropout,
      activation: 'gelu',
      normFirst: true,
      batchFirst: true,
    });
    this.blocks = new nn.TransformerEncoder(layer, cfg.layers);
    this.ln_f = new nn.LayerNorm(cfg.dModel);
    this.head = new nn.Linear(cfg.dModel, cfg.vocab, { bias: false });
    this.head.weight = this.tok.weight; // tied: one parameter, one summed gradient
    // GPT-2's scheme: N(0, 0.02) weights, zero biases, LayerNorm at identity.
    for (const [name, p] of this.namedParameters()) {
      if (name.endsWith('bias')) nn.init.zeros_(p);
      else if (/norm\d?\.weight$|ln_f\.weight$/.test(name)) nn.init.ones_(p);
      else nn.init.normal_(p, 0, 0.02);
    }
  }

  /** ids [B, T] → logits [B, T, vocab]. */
  forward(ids: fl.Tensor): fl.Tensor {
    const t = ids.shape[1];
    const positions = fl.arange(0, t, 1, { dtype: 'i64' });
    const x = this.tok.forward(ids).add(this.pos.forward(positions));
    return this.head.forward(this.ln_f.forward(this.blocks.forward(x, { isCausal: true })));
  }
}

/** The window starts of step `s`: a fixed hash of (step, row), so every framework sees the same batches. */
export function batchStarts(step: number, batch: number, range: number): number[] {
  return Array.from({ length: batch }, (_, r) => Number((BigInt(step * batch + r) * 2654435761n) % BigInt(range)));
}

function windows(tokens: Int32Array, starts: number[], t: number): [fl.Tensor, fl.Tensor] {
  const x = new BigInt64Array(starts.length * t);
  const y = new BigInt64Array(starts.length * t);
  starts.forEach((s, r) => {
    for (let j = 0; j < t; j++) {
      x[r * t + j] = BigInt(tokens[s + j]);
      y[r * t + j] = BigInt(tokens[s + j + 1]);
    }
  });
  return [fl.tensor(x, { shape: [starts.length, t] }), fl.tensor(y, { shape: [starts.length, t] })];
}

/**
 * Samples `n` characters after `prompt`: softmax(logits / temperature) over the top-k tokens,
 * drawn on the host from the probabilities (the vocabulary is small).
 */
export async function generate(
  model: GptMini,
  tok: fl.data.CharTokenizer,
  prompt: string,
  n: number,
  temperature = 0.8,
  topK = 10,
): Promise<string> {
  model.eval();
  const ids = Array.from(tok.encode(prompt));
  let state = 12345;
  const rand = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  for (let i = 0; i < n; i++) {
    const ctx = ids.slice(-model.cfg.context);
    const logits = await fl
      .noGrad(() =>
        fl.tidy(() =>
          model
            .forward(fl.tensor(BigInt64Array.from(ctx, BigInt), { shape: [1, ctx.length] }))
            .narrow(1, ctx.length - 1, 1)
            .reshape([-1]),
        ),
      )
      .data();
    const order = Array.from(logits.keys())
      .sort((a, b) => Number(logits[b]) - Number(logits[a]))
      .slice(0, topK);
    const w = order.map((j) => Math.exp((Number(logits[j]) - Number(logits[order[0]])) / temperature));
    let u = rand() * w.reduce((a, b) => a + b, 0);
    let pick = order[order.length - 1];
    for (let j = 0; j < order.length; j++) {
      u -= w[j];
      if (u <= 0) {
        pick = order[j];
        break;
      }
    }
    ids.push(pick);
  }
  model.train();
  return tok.decode(ids);
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`--${name} must be a non-negative number, got ${process.argv[i + 1]}`);
  return v;
}

async function main(): Promise<void> {
  const steps = arg('steps', 200);
  const batch = arg('batch', 32);
  const lr = arg('lr', 1e-3);
  const seed = arg('seed', 0);
  const evalBatches = arg('eval-batches', 8);
  if (process.argv.includes('--threads')) fl.setNumThreads(arg('threads', 2));
  const context = 128;
  const text = fl.data.fortunesCorpus();
  const tok = fl.data.CharTokenizer.fit(text);
  const all = tok.encode(text);
  const split = Math.floor(all.length * 0.9);
  const train = all.subarray(0, split);
  const val = all.subarray(split);
  fl.manualSeed(seed);
  const model = new GptMini({ vocab: tok.vocabSize, context, dModel: 128, heads: 4, layers: 4, dropout: 0 });
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
  const bar = fl.utils.progress(
    Array.from({ length: steps }, (_, i) => i),
    { desc: 'gpt-mini' },
  );
  let trained = 0;
  const started = performance.now();
  for (const s of bar) {
    const [x, y] = windows(train, batchStarts(s, batch, train.length - context - 1), context);
    const loss = fl.tidy(() => {
      const l = nn.functional.crossEntropy(model.forward(x).reshape([-1, tok.vocabSize]), y.reshape([-1]));
      opt.zeroGrad();
      l.backward();
      fl.optim.clipGradNorm_(model.parameters(), 1.0);
      opt.step();
      return l;
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
  // Validation: evenly spaced windows of the held-out tail, the same in every framework.
  model.eval();
  const range = val.length - context - 1;
  let valLoss = 0;
  for (let b = 0; b < evalBatches; b++) {
    const starts = Array.from({ length: batch }, (_, r) => Math.floor(((b * batch + r) * range) / (evalBatches * batch)));
    const [x, y] = windows(val, starts, context);
    valLoss += await fl
      .noGrad(() => fl.tidy(() => nn.functional.crossEntropy(model.forward(x).reshape([-1, tok.vocabSize]), y.reshape([-1]))))
      .item();
    x.dispose();
    y.dispose();
  }
  valLoss /= evalBatches;
  if (!process.argv.includes('--no-sample')) console.log(`--- sample ---\n${await generate(model, tok, 'The ', 200)}\n---`);
  console.log(
    JSON.stringify({
      example: 'gpt-mini',
      steps,
      val_loss: Number(valLoss.toFixed(4)),
      tokens_per_s: Math.round(trained / seconds),
    }),
  );
}

if (require.main === module)
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
