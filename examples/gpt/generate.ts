/**
 * Sampling from a language model as nanoGPT's generate: each step feeds the last `context` tokens,
 * divides the last position's logits by the temperature, keeps the top k (fl.topk), and draws the
 * next token from their softmax (fl.multinomial). A seed makes a sample reproducible without
 * disturbing the global generator's state that training uses.
 */
import * as fl from '../../lib';

export interface GenerateOptions {
  /** Tokens to append (default 100). */
  maxNewTokens?: number;
  /** Divides the logits: below 1 sharper, above 1 flatter (default 1; must be > 0). */
  temperature?: number;
  /** Draw only among the k most likely tokens (default: all); topK 1 is greedy decoding. */
  topK?: number | null;
  /** Seed for the draws (default: the global generator as it stands). */
  seed?: number;
}

export interface LanguageModel extends fl.nn.Module {
  readonly cfg: { context: number; vocab: number };
  forward(ids: fl.Tensor): fl.Tensor;
}

/** ids [B, T] (i64) → [B, T + maxNewTokens], each row continued by sampling. The model is left in the mode it was in. */
export function generate(model: LanguageModel, ids: fl.Tensor, options: GenerateOptions = {}): fl.Tensor {
  const maxNewTokens = options.maxNewTokens ?? 100;
  const temperature = options.temperature ?? 1;
  const topK = options.topK ?? null;
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 0)
    throw new RangeError(`maxNewTokens must be a non-negative integer, got ${maxNewTokens}`);
  if (!(temperature > 0) || !Number.isFinite(temperature))
    throw new RangeError(`temperature must be a positive number, got ${temperature}`);
  if (topK !== null && (!Number.isInteger(topK) || topK < 1)) throw new RangeError(`topK must be a positive integer, got ${topK}`);
  if (ids.ndim !== 2 || ids.dtype !== 'i64') throw new RangeError(`ids must be [batch, tokens] i64, got [${ids.shape}] ${ids.dtype}`);
  const saved = options.seed === undefined ? null : fl.getRngState();
  if (options.seed !== undefined) fl.manualSeed(options.seed);
  const wasTraining = model.training;
  model.eval();
  const { context, vocab } = model.cfg;
  const k = topK === null ? vocab : Math.min(topK, vocab);
  let out = ids.clone();
  try {
    for (let step = 0; step < maxNewTokens; step++) {
      const next = fl.noGrad(() =>
        fl.tidy(() => {
          const t = out.shape[1];
          const ctx = t > context ? out.narrow(1, t - context, context) : out;
          const logits = model
            .forward(ctx)
            .narrow(1, ctx.shape[1] - 1, 1)
            .reshape([ctx.shape[0], vocab])
            .div(temperature);
          const { values, indices } = fl.topk(logits, k, -1);
          const choice = fl.multinomial(fl.softmax(values, -1), 1);
          return fl.gather(indices, 1, choice);
        }),
      );
      const grown = fl.cat([out, next], 1);
      out.dispose();
      next.dispose();
      out = grown;
    }
  } finally {
    if (wasTraining) model.train();
    if (saved) fl.setRngState(saved);
  }
  return out;
}
