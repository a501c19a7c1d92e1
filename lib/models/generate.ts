/**
 * Autoregressive decoding for CausalLM: a prefill over the prompt, then one token per step through
 * the preallocated KV cache; the same loop drives the blocking generate() and the async stream().
 * Each step reads only the last position's logits ([batch, vocab]) back to JS, where the choice is
 * made as transformers' logits processors make it (repetition penalty, then temperature, top-k,
 * top-p), with a seeded generator of its own: a seed reproduces a sample on any device and never
 * disturbs the global generator that training draws from.
 */
import type { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import { noGrad } from '../dispatch/grad_mode';
import { tidy } from '../memory';
import { checkOptions, flockError, shapeError } from '../errors';
import { checkBool, checkInt, checkNumber } from '../validate';
import { KVCache } from './kv_cache';
import { rowsOf, stepContext } from './step';
import { eosTokens } from './config';
import type { CausalLM } from './causal_lm';

/**
 * Decoding options. Decoding is greedy (argmax) unless `doSample` is true; `temperature: 0` is
 * greedy even then. Sampling draws from softmax(logits / temperature) restricted by topK and topP.
 */
export interface GenerateOptions {
  /** Tokens to add to each row at most (default 20, as transformers). */
  maxNewTokens?: number;
  /** Sample instead of taking the most likely token (default false). */
  doSample?: boolean;
  /** Divides the logits before sampling (default 1); 0 means greedy. */
  temperature?: number;
  /** Sample among the k most likely tokens only (default: all). */
  topK?: number | null;
  /** Sample from the smallest set of tokens whose probability reaches topP (default 1: all). */
  topP?: number;
  /** transformers' repetition penalty over the row's tokens so far, prompt included (default 1: none). */
  repetitionPenalty?: number;
  /** A row stops after producing one of these (default: config.eos_token_id; [] never stops early). */
  stopTokens?: number[];
  /** Fills rows that have stopped (default: config.pad_token_id, else the first stop token, else 0). */
  padTokenId?: number;
  /** Seed of the sampling generator (default: a random one). */
  seed?: number;
  /** [batch, t] of 1 (token) and 0 (left padding), as transformers' attention_mask (default all 1). */
  attentionMask?: Tensor | number[][] | null;
  /** Decode through the KV cache (default true); false recomputes the whole context every step. */
  useCache?: boolean;
}

/** One step of {@link stream}: the token chosen for each row (padTokenId for rows already stopped). */
export interface StreamStep {
  /** 0 for the first new token. */
  step: number;
  tokens: number[];
  /** Whether each row has stopped (by a stop token, this step or before). */
  finished: boolean[];
}

const KEYS = [
  'maxNewTokens',
  'doSample',
  'temperature',
  'topK',
  'topP',
  'repetitionPenalty',
  'stopTokens',
  'padTokenId',
  'seed',
  'attentionMask',
  'useCache',
];

/** mulberry32: a small, fast 32-bit generator; the same seed gives the same draws everywhere. */
function generator(seed: number): () => number {
  let a = (seed ^ Math.floor(seed / 2 ** 32)) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

interface Choice {
  sample: boolean;
  temperature: number;
  topK: number | null;
  topP: number;
  penalty: number;
}

/** The index of the largest value (the first of equal ones). */
function argmax(v: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
  return best;
}

/** The next token of one row from its logits, as transformers' processors and warpers choose it. */
function pick(logits: ArrayLike<number>, seen: number[], c: Choice, rng: () => number): number {
  if (!c.sample && c.penalty === 1) return argmax(logits);
  const v = Array.from(logits);
  if (c.penalty !== 1) for (const t of new Set(seen)) v[t] = v[t] < 0 ? v[t] * c.penalty : v[t] / c.penalty;
  if (!c.sample) return argmax(v);
  for (let i = 0; i < v.length; i++) v[i] /= c.temperature;
  if (c.topK !== null && c.topK < v.length) {
    const kth = [...v].sort((a, b) => b - a)[c.topK - 1];
    for (let i = 0; i < v.length; i++) if (v[i] < kth) v[i] = Number.NEGATIVE_INFINITY;
  }
  const max = Math.max(...v);
  const p = v.map((x) => Math.exp(x - max));
  if (c.topP < 1) {
    // transformers: drop the tokens whose cumulative probability, ascending, is ≤ 1 - topP; keep the top one.
    const total = p.reduce((a, b) => a + b, 0);
    const order = p.map((_, i) => i).sort((a, b) => p[a] - p[b]);
    let cum = 0;
    for (let j = 0; j < order.length - 1; j++) {
      cum += p[order[j]] / total;
      if (cum <= 1 - c.topP) p[order[j]] = 0;
    }
  }
  const total = p.reduce((a, b) => a + b, 0);
  let u = rng() * total;
  for (let i = 0; i < p.length; i++) {
    u -= p[i];
    if (u < 0 && p[i] > 0) return i;
  }
  let last = p.length - 1;
  while (last > 0 && p[last] === 0) last--;
  return last;
}

/** The decoding state shared by generate() and stream(). */
class Decoding {
  readonly rows: number[][];
  readonly keyMask: number[][];
  readonly finished: boolean[];
  readonly maxNewTokens: number;
  step = 0;
  readonly #model: CausalLM;
  /** The model's device, read once (the getter walks the parameters). */
  readonly #device: string;
  readonly #cache: KVCache | null;
  readonly #choice: Choice;
  readonly #stop: Set<number>;
  readonly #pad: number;
  readonly #rng: () => number;

  constructor(model: CausalLM, ids: Tensor | number[][], options: GenerateOptions, op: string) {
    const o = checkOptions(op, options, KEYS);
    this.#model = model;
    this.#device = model.device;
    this.rows = rowsOf(op, 'ids', ids).map((r) => [...r]);
    const b = this.rows.length;
    const t = this.rows[0].length;
    if (t === 0) throw shapeError(op, 'ids must hold at least one token per row');
    for (const r of this.rows)
      for (const x of r)
        if (x < 0 || x >= model.vocabSize)
          throw flockError('ERR_INDEX', op, `token ${x} is out of range for vocab_size ${model.vocabSize}`);
    this.keyMask = o.attentionMask ? rowsOf(op, 'attentionMask', o.attentionMask).map((r) => [...r]) : this.rows.map((r) => r.map(() => 1));
    if (this.keyMask.length !== b || this.keyMask[0].length !== t) throw shapeError(op, `attentionMask must be [${b}, ${t}] like ids`);
    for (const m of this.keyMask)
      if (m[t - 1] !== 1)
        throw flockError('ERR_ARG', op, 'each row must end in a real token (attentionMask 1): pad prompts on the left for generation');
    this.maxNewTokens = checkInt(op, 'maxNewTokens', o.maxNewTokens ?? 20, 0);
    const temperature = checkNumber(op, 'temperature', o.temperature ?? 1, { min: 0 });
    this.#choice = {
      sample: checkBool(op, 'doSample', o.doSample ?? false) && temperature > 0,
      temperature,
      topK: o.topK === undefined || o.topK === null ? null : checkInt(op, 'topK', o.topK, 1),
      topP: checkNumber(op, 'topP', o.topP ?? 1, { above: 0, max: 1 }),
      penalty: checkNumber(op, 'repetitionPenalty', o.repetitionPenalty ?? 1, { above: 0 }),
    };
    const stops = o.stopTokens ?? eosTokens(model.config);
    if (!Array.isArray(stops)) throw flockError('ERR_ARG', op, 'stopTokens must be an array of token ids');
    stops.forEach((s, i) => checkInt(op, `stopTokens[${i}]`, s, 0));
    this.#stop = new Set(stops);
    const padDefault = model.config.pad_token_id ?? stops[0] ?? 0;
    this.#pad = checkInt(op, 'padTokenId', o.padTokenId ?? padDefault, 0);
    const seed = o.seed === undefined ? Math.floor(Math.random() * 2 ** 32) : checkInt(op, 'seed', o.seed, 0);
    this.#rng = generator(seed);
    const real = Math.max(...this.keyMask.map((m) => m.reduce((a, x) => a + (x ? 1 : 0), 0)));
    if (real + this.maxNewTokens - 1 > model.maxPositions)
      throw flockError(
        'ERR_RANGE',
        op,
        `${real} prompt tokens + ${this.maxNewTokens} new ones exceed the model's ${model.maxPositions} positions`,
      );
    this.finished = new Array(b).fill(false);
    const useCache = checkBool(op, 'useCache', o.useCache ?? true);
    this.#cache =
      useCache && this.maxNewTokens > 0
        ? new KVCache({ ...model.cacheShape, batch: b, maxLength: t + this.maxNewTokens, dtype: model.dtype, device: this.#device })
        : null;
  }

  get done(): boolean {
    return this.step >= this.maxNewTokens || this.finished.every(Boolean);
  }

  /** Runs the model over the tokens it has not seen; the last position's logits [batch, vocab], f32. */
  logits(): Tensor {
    const model = this.#model;
    return noGrad(() =>
      tidy(() => {
        const start = this.#cache ? this.#cache.length : 0;
        const fresh = this.rows.map((r) => r.slice(start));
        const t = fresh[0].length;
        const ids = tensor(Int32Array.from(fresh.flat()), { dtype: 'i64', shape: [fresh.length, t], device: this.#device });
        const out = model.step(ids, stepContext(this.keyMask, start, t, this.#cache, true));
        const last = out.reshape([fresh.length, model.vocabSize]);
        return last.dtype === 'f32' || last.dtype === 'f64' ? last : last.to('f32');
      }),
    );
  }

  /** Chooses each row's next token from the read logits and appends it. */
  choose(data: ArrayLike<number>): StreamStep {
    const v = this.#model.vocabSize;
    const tokens = this.rows.map((row, r) => {
      if (this.finished[r]) return this.#pad;
      const logits = ArrayBuffer.isView(data)
        ? (data as Float32Array).subarray(r * v, (r + 1) * v)
        : Array.prototype.slice.call(data, r * v, (r + 1) * v);
      const tok = pick(logits, row, this.#choice, this.#rng);
      if (this.#stop.has(tok)) this.finished[r] = true;
      return tok;
    });
    tokens.forEach((tok, r) => {
      this.rows[r].push(tok);
      this.keyMask[r].push(1);
    });
    return { step: this.step++, tokens, finished: [...this.finished] };
  }

  result(): Tensor {
    return tensor(Int32Array.from(this.rows.flat()), { dtype: 'i64', shape: [this.rows.length, this.rows[0].length] });
  }

  dispose(): void {
    this.#cache?.dispose();
  }
}

/** See CausalLM.generate. */
export function generate(model: CausalLM, ids: Tensor | number[][], options: GenerateOptions = {}): Tensor {
  const d = new Decoding(model, ids, options, `${model.constructor.name}.generate`);
  try {
    while (!d.done) {
      const logits = d.logits();
      try {
        d.choose(logits.dataSync() as ArrayLike<number>);
      } finally {
        logits.dispose();
      }
    }
    return d.result();
  } finally {
    d.dispose();
  }
}

/** See CausalLM.stream. Options are checked at once; decoding starts at the first next(). */
export function stream(
  model: CausalLM,
  ids: Tensor | number[][],
  options: GenerateOptions = {},
): AsyncGenerator<StreamStep, void, undefined> {
  return steps(new Decoding(model, ids, options, `${model.constructor.name}.stream`));
}

/** Streams waiting to queue their next step, first come first served. */
const waiting: (() => void)[] = [];
let releasing = false;

/**
 * Resolves on a turn of the event loop of its own: one waiting stream per turn (a check phase),
 * so queueing a step (a forward's worth of ops, milliseconds of JS) is never followed in the same
 * turn by another stream's, and timers and I/O run between any two. With one setImmediate each,
 * streams whose reads completed together queued their steps back to back: four streams held the
 * loop for four steps at a time.
 */
function turn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!releasing) {
      releasing = true;
      setImmediate(release);
    }
  });
}

function release(): void {
  (waiting.shift() as () => void)();
  if (waiting.length) setImmediate(release);
  else releasing = false;
}

async function* steps(d: Decoding): AsyncGenerator<StreamStep, void, undefined> {
  try {
    while (!d.done) {
      // A macrotask before each step: timers and I/O run even when the device answers at once.
      await turn();
      const logits = d.logits();
      let data: ArrayLike<number>;
      try {
        data = (await logits.data()) as ArrayLike<number>;
      } finally {
        logits.dispose();
      }
      yield d.choose(data);
    }
  } finally {
    d.dispose();
  }
}
