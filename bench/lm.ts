/**
 * Language models on the CPU beside PyTorch 1.13: the 6-layer, 384-wide GPT-2 and a small Llama
 * (bench/shared/lm_models.ts; bench/anchors/torch_lm.py builds the same shapes in plain PyTorch with
 * a hand-written KV cache). Per model: training tokens/s, full and LoRA (r 8 on the attention and
 * MLP projections, AdamW), on batches of [batch, context]; greedy generation tokens/s through the
 * KV cache at batch 1 and at `batch` (a prompt of `prompt` tokens, `new-tokens` new ones, prefill
 * included). Then, for GPT-2, event-loop delay (p50/p99/max, perf_hooks.monitorEventLoopDelay)
 * while `streams` model.stream() generations answer HTTP requests on 127.0.0.1 at once.
 *
 * The anchor runs beside it in the same command (bench/anchors/serve.ts), and the two alternate
 * round by round, the anchor once per thread count in --torch-threads, so that both see the same
 * machine when it is shared; the anchor removes OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE from its own
 * environment before loading torch (set on this machine, they force an older OpenBLAS kernel).
 * Each figure is the median of --rounds rounds; PyTorch's best thread count is the comparison. JSON lines:
 * one per figure and framework, then a summary with the ratios and the two goals (generation at
 * batch 1 ≥ 1.5x PyTorch for GPT-2; LoRA training ≥ PyTorch).
 *   npm run bench -- lm [--models gpt2,llama] [--rounds 3] [--steps 3] [--batch 8] [--context 128]
 *     [--prompt 16] [--new-tokens 128] [--vocab 8192] [--streams 4] [--threads N] [--torch-threads 1,2] [--no-anchor] [--no-serve]
 * --threads sets flockml's intra-op threads (fl.setNumThreads; default every core).
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import * as fl from '../lib';
import { numberFlag, stringFlag } from './shared/args';
import { median } from './shared/timing';
import { Anchor } from './anchors/serve';
import { MODELS, type ModelName, build } from './shared/lm_models';
import { serveStreams } from './shared/lm_serve';

const models = stringFlag('models', 'gpt2,llama').split(',') as ModelName[];
const rounds = numberFlag('rounds', 3);
const steps = numberFlag('steps', 3);
const batch = numberFlag('batch', 8);
const context = numberFlag('context', 128);
const promptLen = numberFlag('prompt', 16);
const newTokens = numberFlag('new-tokens', 128);
const vocab = numberFlag('vocab', 8192);
const streams = numberFlag('streams', 4);
const threads = numberFlag('threads', 0);
if (threads > 0) fl.setNumThreads(threads);
const torchThreads = stringFlag('torch-threads', '1,2').split(',').map(Number);
const positions = Math.max(512, promptLen + newTokens, context);
for (const m of models) if (!(m in MODELS)) throw new RangeError(`--models: unknown model ${m} (gpt2, llama)`);

type Figure = { what: 'train'; mode: 'full' | 'lora' } | { what: 'generate'; batch: number };
const FIGURES: Figure[] = [
  { what: 'train', mode: 'full' },
  { what: 'generate', batch: 1 },
  { what: 'generate', batch },
  { what: 'train', mode: 'lora' },
];
const key = (model: ModelName, f: Figure) => `${model}/${f.what}/${f.what === 'train' ? f.mode : f.batch}`;

function print(line: Record<string, unknown>): void {
  console.log(JSON.stringify({ bench: 'lm', ...line }));
}

/** One model's training: AdamW over `params`, next-token cross-entropy on one fixed batch. */
class Trainer {
  readonly #step: () => void;

  constructor(model: fl.models.CausalLM, params: fl.Tensor[]) {
    fl.manualSeed(1);
    const x = fl.keep(fl.randint(0, vocab, [batch, context + 1], { dtype: 'i64' }));
    const input = x.narrow(1, 0, context);
    const target = fl.keep(x.narrow(1, 1, context).contiguous().reshape([-1]));
    const opt = new fl.optim.AdamW(params, { lr: 1e-4 });
    this.#step = () =>
      fl.tidy(() => {
        model.train();
        const loss = fl.nn.functional.crossEntropy(model.forward(input).reshape([-1, vocab]), target);
        opt.zeroGrad();
        loss.backward();
        opt.step();
      });
    // Two warm-up steps: the first fills the allocator's cache, the second the optimizer's state.
    this.#step();
    this.#step();
  }

  /** Tokens/s: the median of `steps` steps, each ended by a device sync. */
  async rate(): Promise<number> {
    const times: number[] = [];
    for (let i = 0; i < steps; i++) {
      const t0 = performance.now();
      this.#step();
      await fl.sync();
      times.push(performance.now() - t0);
    }
    return (batch * context * 1000) / median(times);
  }
}

/** The bench's prompts: `rows` rows of `promptLen` tokens (the anchor's formula). */
const prompts = (rows: number) =>
  Array.from({ length: rows }, (_, r) => Array.from({ length: promptLen }, (_, i) => (r * 31 + i * 7) % vocab));

/** flockml's side: each model once (full training and generation) and once adapted (LoRA). */
class Ours {
  readonly base = new Map<ModelName, fl.models.CausalLM>();
  readonly #trainers = new Map<string, Trainer>();
  readonly #warm = new Set<string>();

  model(name: ModelName): fl.models.CausalLM {
    if (!this.base.has(name)) this.base.set(name, build(name, vocab, positions));
    return this.base.get(name) as fl.models.CausalLM;
  }

  async figure(name: ModelName, f: Figure): Promise<number> {
    const model = this.model(name);
    if (f.what === 'generate') {
      model.eval();
      const ids = prompts(f.batch);
      if (!this.#warm.has(key(name, f))) {
        this.#warm.add(key(name, f));
        model.generate(ids, { maxNewTokens: 8, stopTokens: [] }).dispose();
      }
      const t0 = performance.now();
      model.generate(ids, { maxNewTokens: newTokens, stopTokens: [] }).dispose();
      return (f.batch * newTokens * 1000) / (performance.now() - t0);
    }
    const k = key(name, f);
    if (!this.#trainers.has(k)) {
      if (f.mode === 'lora') {
        const adapted = fl.nn.lora.apply(build(name, vocab, positions), { r: 8, alpha: 16, targets: MODELS[name].lora });
        this.#trainers.set(k, new Trainer(adapted, fl.nn.lora.parameters(adapted)));
      } else this.#trainers.set(k, new Trainer(model, model.parameters()));
    }
    return (this.#trainers.get(k) as Trainer).rate();
  }
}

const round1 = (v: number) => Number(v.toFixed(1));

async function main(): Promise<void> {
  const loadBefore = loadavg()[0];
  let anchor: Anchor | null = null;
  let anchorSettings: Record<string, unknown> = { skipped: '--no-anchor' };
  if (!process.argv.includes('--no-anchor')) {
    const sizes = { vocab, steps, batch, context, prompt: promptLen, 'new-tokens': newTokens };
    const started = await Anchor.start(
      join(__dirname, 'anchors', 'torch_lm.py'),
      Object.entries(sizes).flatMap(([k, v]) => [`--${k}`, String(v)]),
    );
    if ('skipped' in started) anchorSettings = { skipped: started.skipped };
    else [anchor, anchorSettings] = [started.anchor, started.ready];
  }
  print({
    settings: true,
    flockml_threads: fl.getNumThreads(),
    cpu_isa: (fl.buildInfo() as { cpuIsa?: string }).cpuIsa ?? null,
    OPENBLAS_CORETYPE: process.env.OPENBLAS_CORETYPE ?? null,
    OPENBLAS_L2_SIZE: process.env.OPENBLAS_L2_SIZE ?? null,
    anchor: anchorSettings,
    torch_threads: torchThreads,
    rounds,
    vocab,
    batch,
    context,
    prompt: promptLen,
    new_tokens: newTokens,
  });
  const ours = new Ours();
  const summary: Record<string, unknown> = { summary: true };
  for (const name of models) {
    for (const f of FIGURES) {
      const mine: number[] = [];
      const theirs = new Map<number, number[]>(torchThreads.map((t) => [t, []]));
      for (let r = 0; r < rounds; r++) {
        mine.push(await ours.figure(name, f));
        for (const threads of anchor ? torchThreads : []) {
          const got = await (anchor as Anchor).request(JSON.stringify({ model: name, threads, ...f }));
          if (!got) throw new Error(`the anchor stopped: ${(anchor as Anchor).lastError()}`);
          theirs.get(threads)?.push(got.tokens_per_s as number);
        }
      }
      const base = { model: name, label: MODELS[name].label, ...f };
      print({ framework: 'flockml', threads: fl.getNumThreads(), ...base, tokens_per_s: round1(median(mine)), rounds: mine.map(round1) });
      if (!anchor) continue;
      let best = { threads: 0, rate: -1 };
      for (const [threads, got] of theirs) {
        print({ framework: 'pytorch', threads, ...base, tokens_per_s: round1(median(got)), rounds: got });
        if (median(got) > best.rate) best = { threads, rate: median(got) };
      }
      summary[key(name, f)] = {
        flockml: round1(median(mine)),
        pytorch: round1(best.rate),
        pytorch_threads: best.threads,
        ratio: Number((median(mine) / best.rate).toFixed(2)),
      };
    }
    if (name === 'gpt2' && !process.argv.includes('--no-serve')) {
      const model = ours.model(name);
      model.eval();
      print({ framework: 'flockml', what: 'serve', model: name, ...(await serveStreams(model, streams, 64, prompts(1)[0])) });
    }
  }
  anchor?.close();
  if (anchor) {
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
