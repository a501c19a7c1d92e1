/**
 * What GPT2 and Llama share: the public forward / generate / stream / savePretrained surface over
 * one method a model implements, `step` (ids and a step context → logits).
 */
import type { Tensor } from '../tensor';
import { Module } from '../nn/module';
import { checkOptions, shapeError } from '../errors';
import { checkTensorArg } from '../validate';
import { shapeStr } from '../ops/util';
import type { DType } from '../dtype';
import { type StepContext, rowsOf, stepContext } from './step';
import { type GenerateOptions, type StreamStep, generate, stream } from './generate';
import { type SavePretrainedOptions, savePretrained } from './pretrained';

export interface ForwardOptions {
  /** [batch, t] of 1 (real token) and 0 (padding), as transformers' attention_mask (default all 1). */
  attentionMask?: Tensor | number[][] | null;
}

/** A decoder-only language model: GPT2 and Llama. */
export abstract class CausalLM extends Module {
  /** The config.json fields this model was built from (Hugging Face's names). */
  abstract readonly config: Record<string, unknown> & { eos_token_id?: number | number[] | null; pad_token_id?: number | null };
  abstract readonly vocabSize: number;
  /** The longest position id the model can embed (GPT-2's n_positions), or Infinity. */
  abstract readonly maxPositions: number;
  /** @internal the cache's geometry. */
  abstract readonly cacheShape: { layers: number; kvHeads: number; headDim: number };

  /** @internal one step: ids [batch, t] → logits [batch, t or 1, vocab], extending ctx.cache. */
  abstract step(ids: Tensor, ctx: StepContext): Tensor;

  /** @internal Hugging Face's tensor name for each state-dict name, and whether the tensor is stored transposed. */
  abstract hfNames(): { name: string; hf: string; transposed: boolean }[];

  /** The parameters' dtype and device. */
  get dtype(): DType {
    return this.parameters()[0].dtype;
  }

  get device(): string {
    return this.parameters()[0].device;
  }

  /**
   * ids [batch, t] (integers) → logits [batch, t, vocab]. With an attention mask, padded positions
   * are skipped and position ids are counted from each row's first real token, as transformers does.
   */
  forward(ids: Tensor, options: ForwardOptions = {}): Tensor {
    const op = `${this.constructor.name}.forward`;
    const o = checkOptions(op, options, ['attentionMask']);
    checkTensorArg(op, 'ids', ids);
    if (ids.ndim !== 2) throw shapeError(op, `ids must be [batch, tokens], got ${shapeStr(ids.shape)}`);
    const [b, t] = ids.shape;
    const mask = o.attentionMask ? rowsOf(op, 'attentionMask', o.attentionMask) : Array.from({ length: b }, () => new Array(t).fill(1));
    if (mask.length !== b || mask[0].length !== t) throw shapeError(op, `attentionMask must be [${b}, ${t}] like ids`);
    return this.step(ids, stepContext(mask, 0, t, null, false));
  }

  /**
   * Continues each row of `ids` ([batch, t] tensor or array; left-pad rows of different lengths and
   * give `attentionMask`) and returns [batch, t + steps] i64: the prompt and the new tokens, rows
   * that stopped early filled with `padTokenId`. Greedy unless `doSample` is true; see
   * {@link GenerateOptions}. Blocks until done: {@link stream} yields tokens as they come.
   */
  generate(ids: Tensor | number[][], options: GenerateOptions = {}): Tensor {
    return generate(this, ids, options);
  }

  /**
   * Yields each step's new token for every row as soon as it is chosen, awaiting the device and a
   * macrotask between steps so timers and I/O keep running; ends when every row has stopped or
   * after maxNewTokens steps. Same tokens as {@link generate} with the same options.
   */
  stream(ids: Tensor | number[][], options: GenerateOptions = {}): AsyncGenerator<StreamStep, void, undefined> {
    return stream(this, ids, options);
  }

  /**
   * Writes config.json and model.safetensors (transformers' names and layout, `format: pt`) to
   * `dir`; with `maxShardSize`, shards and model.safetensors.index.json as save_pretrained does.
   */
  savePretrained(dir: string, options: SavePretrainedOptions = {}): Promise<void> {
    return savePretrained(this, dir, options);
  }
}
