/**
 * LoRA fine-tuning of a GPT-2 on the fortunes of Debian's `fortunes` package, then a sample streamed
 * token by token with model.stream(). Without --model it builds a small GPT-2 (4 layers, 128 wide)
 * from scratch; with --model DIR it loads a Hugging Face GPT-2 folder (GPT2.fromPretrained) and
 * uses DIR/tokenizer.json when there is one. The default tokenizer is the byte-level BPE of
 * test/fixtures/text/gpt2_tokenizer.json (GPT-2's scheme with a 377-token vocabulary).
 *   npm run example:finetune -- [--steps 40] [--batch 8] [--context 64] [--lr 1e-2] [--r 8]
 *     [--alpha 16] [--chars 200000] [--model DIR] [--tokenizer FILE] [--prompt TEXT]
 *     [--max-new-tokens 80] [--seed 0] [--save DIR]
 * Under `flockml launch` (RANK and WORLD_SIZE set) it trains with DistributedDataParallel, each rank
 * on its slice of every global batch of --batch rows; rank 0 evaluates, streams the sample and prints.
 *   npm run example:finetune:ddp -- --steps 40
 * Its last line is {"example":"finetune-lm","steps":…,"val_loss_before":…,"val_loss":…,
 * "tokens_per_s":…,"sample_tokens":…} (tokens_per_s: tokens of the global batch per second).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../lib';
import { option } from './common';
import { batchStarts, rankSlice, windows } from './gpt/data';

const DEFAULT_TOKENIZER = join(__dirname, '..', 'test', 'fixtures', 'text', 'gpt2_tokenizer.json');

function num(name: string, fallback: number): number {
  const raw = option(name);
  const v = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`--${name} must be a non-negative number, got ${raw}`);
  return v;
}

/**
 * About `chars` characters of prose from the corpus: every k-th fortune, skipping ASCII art (few
 * letters), so the sample spans all the cookie files rather than the first few.
 */
function fortunes(chars: number): string[] {
  const all = fl.data
    .fortunesCorpus()
    .split('\n\n')
    .filter((f) => (f.match(/[A-Za-z ]/g)?.length ?? 0) > 0.8 * f.length);
  const total = all.reduce((n, f) => n + f.length, 0);
  const k = Math.max(1, Math.floor(total / chars));
  return all.filter((_, i) => i % k === 0);
}

/** Mean next-token cross-entropy of logits [b, t, vocab] against targets [b, t]. */
const lossOf = (logits: fl.Tensor, y: fl.Tensor) => fl.nn.functional.crossEntropy(logits.reshape([-1, logits.shape[2]]), y.reshape([-1]));

/**
 * Trains every parameter of a freshly built model for a few AdamW steps, so the adapters have a
 * base worth adapting. Each rank runs the same batches: the result is the same everywhere.
 */
async function pretrain(model: fl.models.GPT2, tokens: Int32Array, steps: number, batch: number, context: number): Promise<void> {
  const opt = new fl.optim.AdamW(model.parameters(), { lr: 1e-2, weightDecay: 0.01 });
  const bar = fl.utils.progress(
    Array.from({ length: steps }, (_, i) => i),
    { desc: 'pretrain', rank0Only: true },
  );
  for (const s of bar) {
    const [x, y] = windows(tokens, batchStarts(s, batch, tokens.length - context - 1), context);
    const loss = fl.tidy(() => {
      const l = lossOf(model.forward(x), y);
      opt.zeroGrad();
      l.backward();
      return l;
    });
    fl.tidy(() => opt.step());
    if (s % 10 === 0 || s === steps - 1) bar.setPostfix({ loss: await loss.item() });
    loss.dispose();
    x.dispose();
    y.dispose();
  }
  opt.zeroGrad();
  for (const st of opt.state.values()) for (const v of Object.values(st)) if (v instanceof fl.Tensor) v.dispose();
}

async function main(): Promise<void> {
  const steps = num('steps', 40);
  const batch = num('batch', 8);
  const context = num('context', 64);
  const lr = num('lr', 1e-2);
  const seed = num('seed', 0);
  const distributed = process.env.WORLD_SIZE !== undefined;
  const pg = distributed ? await fl.distributed.initProcessGroup({ backend: 'ring' }) : null;
  const rank = pg?.rank ?? 0;
  const world = pg?.size ?? 1;

  const modelDir = option('model');
  const besideModel = modelDir && existsSync(join(modelDir, 'tokenizer.json')) ? join(modelDir, 'tokenizer.json') : undefined;
  const tok = await fl.text.Tokenizer.fromFile(option('tokenizer') ?? besideModel ?? DEFAULT_TOKENIZER);
  const eos = tok.eosTokenId;
  if (eos === null) throw new RangeError('the tokenizer has no end-of-text token to separate the fortunes with');

  // One token stream: each fortune followed by the end-of-text token. A built model is first
  // pretrained on the first half; LoRA trains on the second, less the last tenth (validation).
  const ids = fortunes(num('chars', 200_000)).flatMap((f) => [...tok.encode(f, { addSpecialTokens: false }), eos]);
  const half = Math.floor(ids.length / 2);
  const split = Math.floor(ids.length * 0.9);
  const train = Int32Array.from(ids.slice(half, split));
  const val = Int32Array.from(ids.slice(split));

  fl.manualSeed(seed); // every rank builds the same model and adapters (DDP broadcasts rank 0's anyway)
  const model = modelDir
    ? await fl.models.GPT2.fromPretrained(modelDir)
    : new fl.models.GPT2({ vocab_size: tok.vocabSize, n_positions: 256, n_embd: 128, n_layer: 4, n_head: 4, eos_token_id: eos });
  if (tok.vocabSize > model.vocabSize)
    throw new RangeError(`the tokenizer's ${tok.vocabSize} tokens exceed the model's ${model.vocabSize}`);
  if (context + 1 > model.maxPositions) throw new RangeError(`--context ${context} exceeds the model's ${model.maxPositions} positions`);
  const pretrainSteps = modelDir ? 0 : num('pretrain-steps', 60);
  if (pretrainSteps > 0) await pretrain(model, Int32Array.from(ids.slice(0, half)), pretrainSteps, batch, context);
  fl.nn.lora.apply(model, { r: num('r', 8), alpha: num('alpha', 16), targets: ['c_attn', 'c_proj', 'c_fc'] });
  // Validation: the same evenly spaced windows of the held-out tail before and after.
  const validate = async () => {
    const range = val.length - context - 1;
    const starts = Array.from({ length: 16 }, (_, r) => Math.floor((r * range) / 16));
    const [x, y] = windows(val, starts, context);
    model.eval();
    const v = await fl.noGrad(() => fl.tidy(() => lossOf(model.forward(x), y))).item();
    model.train();
    x.dispose();
    y.dispose();
    return v;
  };
  const valBefore = rank === 0 ? await validate() : Number.NaN;

  const ddp = pg ? await fl.parallel.DistributedDataParallel.create(model, (x: fl.Tensor) => model.forward(x)) : null;
  const forward = (x: fl.Tensor) => (ddp ? ddp.forward(x) : model.forward(x));
  // Only the adapters train: model.parameters() would do as well (frozen weights get no state).
  const opt = new fl.optim.AdamW(fl.nn.lora.parameters(model), { lr, weightDecay: 0 });
  const bar = fl.utils.progress(
    Array.from({ length: steps }, (_, i) => i),
    { desc: 'lora', rank0Only: true },
  );
  const started = performance.now();
  for (const s of bar) {
    const [x, y] = windows(train, rankSlice(batchStarts(s, batch, train.length - context - 1), rank, world), context);
    const loss = fl.tidy(() => {
      const l = lossOf(forward(x), y);
      opt.zeroGrad();
      l.backward();
      return l;
    });
    if (ddp) await ddp.syncGradients();
    fl.tidy(() => opt.step());
    if (s % 10 === 0 || s === steps - 1) bar.setPostfix({ loss: await loss.item() });
    loss.dispose();
    x.dispose();
    y.dispose();
  }
  await fl.sync();
  const seconds = (performance.now() - started) / 1000;

  if (rank === 0) {
    const valLoss = await validate();
    const saveDir = option('save');
    if (saveDir) await fl.nn.lora.save(model, saveDir);
    // The sample, printed as it is made: the text of all tokens so far, less what is already out
    // (a byte-level token may end inside a character, which the next one completes).
    const prompt = option('prompt') ?? 'The ';
    const promptIds = [...tok.encode(prompt, { addSpecialTokens: false })];
    const made: number[] = [];
    let shown = '';
    process.stdout.write(`--- sample ---\n${prompt}`);
    model.eval();
    for await (const { tokens } of model.stream([promptIds], {
      maxNewTokens: num('max-new-tokens', 80),
      doSample: true,
      temperature: 0.8,
      topK: 40,
      seed: 12345,
      stopTokens: [eos],
    })) {
      if (tokens[0] === eos) break;
      made.push(tokens[0]);
      const text = tok.decode(made);
      if (!text.endsWith('\uFFFD')) {
        process.stdout.write(text.slice(shown.length));
        shown = text;
      }
    }
    process.stdout.write('\n---\n');
    console.log(
      JSON.stringify({
        example: 'finetune-lm',
        steps,
        pretrain_steps: pretrainSteps,
        trainable: model.numParameters({ trainableOnly: true }),
        parameters: model.numParameters(),
        val_loss_before: Number(valBefore.toFixed(4)),
        val_loss: Number(valLoss.toFixed(4)),
        tokens_per_s: Math.round((steps * batch * context) / seconds),
        sample_tokens: made.length,
        ...(world > 1 ? { ranks: world } : {}),
      }),
    );
  }
  if (pg) await fl.distributed.destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
