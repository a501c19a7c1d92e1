/**
 * Language models on the CPU beside PyTorch 1.13: the 6-layer, 384-wide GPT-2 and a small Llama
 * (bench/shared/lm_models.ts; bench/anchors/torch_lm.py builds the same shapes in plain PyTorch with
 * a hand-written KV cache). Per model: training tokens/s, full and LoRA (r 8 on the attention and
 * MLP projections, AdamW), on batches of [batch, context]; greedy generation tokens/s through the
 * KV cache at batch 1 and at `batch` (a prompt of `prompt` tokens, `new-tokens` new ones, prefill
 * included). Then, for GPT-2, event-loop delay (p50/p99/max, perf_hooks.monitorEventLoopDelay)
 * while `streams` model.stream() generations answer HTTP requests on 127.0.0.1 at once.
 *
 * The anchor runs in the same command, after each model's figures (so that both see about the same
 * load), once per thread count in --torch-threads, with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
 * removed from its environment (set on this machine, they force an older OpenBLAS kernel); its
 * best thread count per figure is the comparison. JSON lines:
 * one per figure and framework, then a summary with the ratios and the two goals (generation at
 * batch 1 ≥ 1.5x PyTorch for GPT-2; LoRA training ≥ PyTorch).
 *   npm run bench -- lm [--models gpt2,llama] [--steps 5] [--batch 8] [--context 128] [--prompt 16]
 *     [--new-tokens 128] [--vocab 8192] [--streams 4] [--torch-threads 1,2] [--no-anchor] [--no-serve]
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import * as fl from '../lib';
import { numberFlag, stringFlag } from './shared/args';
import { median, timeSteps } from './shared/timing';
import { MODELS, type ModelName, build } from './shared/lm_models';
import { serveStreams } from './shared/lm_serve';

const models = stringFlag('models', 'gpt2,llama').split(',') as ModelName[];
const steps = numberFlag('steps', 5);
const batch = numberFlag('batch', 8);
const context = numberFlag('context', 128);
const promptLen = numberFlag('prompt', 16);
const newTokens = numberFlag('new-tokens', 128);
const vocab = numberFlag('vocab', 8192);
const streams = numberFlag('streams', 4);
const torchThreads = stringFlag('torch-threads', '1,2');
const positions = Math.max(512, promptLen + newTokens, context);
for (const m of models) if (!(m in MODELS)) throw new RangeError(`--models: unknown model ${m} (gpt2, llama)`);

type Figure = { model: ModelName; what: 'train'; mode: 'full' | 'lora' } | { model: ModelName; what: 'generate'; batch: number };
const key = (f: Figure) => (f.what === 'train' ? `${f.model}/train/${f.mode}` : `${f.model}/generate/${f.batch}`);
const ours = new Map<string, number>();

function print(line: Record<string, unknown>): void {
  console.log(JSON.stringify({ bench: 'lm', ...line }));
}

/** Tokens/s of training steps (next-token cross-entropy, AdamW over `params`) on one fixed batch. */
async function trainRate(model: fl.models.CausalLM, params: fl.Tensor[]): Promise<number> {
  fl.manualSeed(1);
  const x = fl.randint(0, vocab, [batch, context + 1], { dtype: 'i64' });
  const input = x.narrow(1, 0, context);
  const target = x.narrow(1, 1, context).contiguous().reshape([-1]);
  const opt = new fl.optim.AdamW(params, { lr: 1e-4 });
  model.train();
  const ms = await timeSteps(steps, async () => {
    fl.tidy(() => {
      const loss = fl.nn.functional.crossEntropy(model.forward(input).reshape([-1, vocab]), target);
      opt.zeroGrad();
      loss.backward();
      opt.step();
    });
  });
  opt.zeroGrad();
  for (const st of opt.state.values()) for (const v of Object.values(st)) if (v instanceof fl.Tensor) v.dispose();
  return (batch * context * 1000) / ms;
}

/** The bench's prompts: `rows` rows of `promptLen` tokens (the anchor's formula). */
const prompts = (rows: number) =>
  Array.from({ length: rows }, (_, r) => Array.from({ length: promptLen }, (_, i) => (r * 31 + i * 7) % vocab));

/** Tokens/s of greedy generation through the KV cache, the median of 3 runs after a short warm-up. */
function generateRate(model: fl.models.CausalLM, rows: number): number {
  model.eval();
  const ids = prompts(rows);
  model.generate(ids, { maxNewTokens: 8, stopTokens: [] }).dispose();
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    model.generate(ids, { maxNewTokens: newTokens, stopTokens: [] }).dispose();
    times.push(performance.now() - t0);
  }
  return (rows * newTokens * 1000) / median(times);
}

function record(f: Figure, tokensPerS: number): void {
  ours.set(key(f), tokensPerS);
  print({
    framework: 'flockml',
    threads: fl.getNumThreads(),
    ...f,
    label: MODELS[f.model].label,
    tokens_per_s: Number(tokensPerS.toFixed(1)),
  });
}

const theirs = new Map<string, { tokensPerS: number; threads: number }>();

/** Runs the anchor on `name`; keeps each figure's best over the thread counts, keyed as ours. */
function anchor(name: ModelName): void {
  const env = { ...process.env };
  delete env.OPENBLAS_CORETYPE;
  delete env.OPENBLAS_L2_SIZE;
  const args = [join(__dirname, 'anchors', 'torch_lm.py'), '--threads', torchThreads, '--models', name];
  for (const [name, v] of [
    ['vocab', vocab],
    ['steps', steps],
    ['batch', batch],
    ['context', context],
    ['prompt', promptLen],
    ['new-tokens', newTokens],
  ] as const)
    args.push(`--${name}`, String(v));
  const r = spawnSync('/usr/bin/python3', args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`torch_lm.py exited with ${r.status}:\n${r.stdout}`);
  for (const line of r.stdout.trim().split('\n')) {
    const j = JSON.parse(line);
    console.log(JSON.stringify(j));
    const k = key(j);
    if ((theirs.get(k)?.tokensPerS ?? -1) < j.tokens_per_s) theirs.set(k, { tokensPerS: j.tokens_per_s, threads: j.threads });
  }
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0];
  print({
    settings: true,
    flockml_threads: fl.getNumThreads(),
    cpu_isa: (fl.buildInfo() as { cpuIsa?: string }).cpuIsa ?? null,
    OPENBLAS_CORETYPE: process.env.OPENBLAS_CORETYPE ?? null,
    OPENBLAS_L2_SIZE: process.env.OPENBLAS_L2_SIZE ?? null,
    anchor_env: 'OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset',
    torch_threads: torchThreads,
    vocab,
    batch,
    context,
    prompt: promptLen,
    new_tokens: newTokens,
  });
  for (const name of models) {
    const model = build(name, vocab, positions);
    record({ model: name, what: 'train', mode: 'full' }, await trainRate(model, model.parameters()));
    for (const rows of [1, batch]) record({ model: name, what: 'generate', batch: rows }, generateRate(model, rows));
    fl.nn.lora.apply(model, { r: 8, alpha: 16, targets: MODELS[name].lora });
    record({ model: name, what: 'train', mode: 'lora' }, await trainRate(model, fl.nn.lora.parameters(model)));
    if (name === 'gpt2' && !process.argv.includes('--no-serve')) {
      fl.nn.lora.unload(model);
      model.eval();
      print({ framework: 'flockml', what: 'serve', model: name, ...(await serveStreams(model, streams, 64, prompts(1)[0])) });
    }
    for (const p of model.parameters()) p.dispose();
    // Right after ours, so that both see about the same load on a shared machine.
    if (!process.argv.includes('--no-anchor')) anchor(name);
  }
  const summary: Record<string, unknown> = { summary: true };
  if (!process.argv.includes('--no-anchor')) {
    for (const [k, v] of ours) {
      const t = theirs.get(k);
      if (!t) continue;
      summary[k] = {
        flockml: Number(v.toFixed(1)),
        pytorch: t.tokensPerS,
        pytorch_threads: t.threads,
        ratio: Number((v / t.tokensPerS).toFixed(2)),
      };
    }
    const ratio = (k: string) => (summary[k] as { ratio: number } | undefined)?.ratio;
    const gen = ratio('gpt2/generate/1');
    const lora = models.map((m) => ratio(`${m}/train/lora`)).filter((r): r is number => r !== undefined);
    summary.goal_generate_gpt2_batch1_1_5x = gen === undefined ? null : gen >= 1.5;
    summary.goal_lora_train_at_least_pytorch = lora.length ? lora.every((r) => r >= 1) : null;
  }
  summary.load_1m = [Number(loadBefore.toFixed(2)), Number(loadavg()[0].toFixed(2))];
  print(summary);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
