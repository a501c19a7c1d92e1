/**
 * Tokenizer: a Hugging Face `tokenizer.json` (byte-level BPE as GPT-2's, sentencepiece-style BPE
 * with byte fallback as Llama's, and whatever else the file describes) for encode and decode.
 *
 * The work is done by @huggingface/tokenizers (Hugging Face's own pure-JS tokenizers, the ones
 * transformers.js runs): no native code, no download at install, zero dependencies. This class adds
 * flockml's names and checks, special-token ids, batches with left or right padding and an
 * attention mask, and tensors.
 */
import { readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool, checkChoice, checkInt } from '../validate';

/** Special tokens by content; each overrides what tokenizer_config.json or the file says. */
export interface SpecialTokenOptions {
  bosToken?: string | null;
  eosToken?: string | null;
  padToken?: string | null;
  unkToken?: string | null;
}

export interface TokenizerOptions extends SpecialTokenOptions {
  /**
   * tokenizer_config.json's contents (special-token names, clean_up_tokenization_spaces). fromFile
   * reads the file beside tokenizer.json when there is one.
   */
  config?: Record<string, unknown>;
}

export interface EncodeOptions {
  /** Add the tokens the file's post-processor adds (Llama's `<s>`; GPT-2 adds none). Default true. */
  addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  /** Leave special tokens (bos, eos, pad…) out of the text. Default false. */
  skipSpecialTokens?: boolean;
}

export interface BatchEncodeOptions extends EncodeOptions {
  /**
   * Which side padding goes: 'right' (default, for training) or 'left' (for generation, so every
   * prompt ends at the last position).
   */
  paddingSide?: 'left' | 'right';
  /** Cut each sequence to its first `maxLength` tokens (Hugging Face's right-side truncation). */
  maxLength?: number;
  /** Pad every row to this length rather than to the longest (must be ≥ the longest after truncation). */
  padTo?: number;
}

export interface BatchEncoding {
  /** Token ids, one row per text, padded with the pad token id. */
  inputIds: number[][];
  /** 1 where a token is, 0 where padding is. */
  attentionMask: number[][];
}

export interface BatchTensors {
  /** i64 [batch, length]. */
  inputIds: Tensor;
  /** i64 [batch, length]: 1 for tokens, 0 for padding. */
  attentionMask: Tensor;
}

const CONFIG_NAMES = ['bos_token', 'eos_token', 'pad_token', 'unk_token'] as const;
// Names models use for their end token when no tokenizer_config.json says (GPT-2, Llama 1/2/3, Mistral).
const EOS_GUESSES = ['</s>', '<|endoftext|>', '<|end_of_text|>', '<|eot_id|>', '<eos>'];
const BOS_GUESSES = ['<s>', '<|begin_of_text|>', '<bos>'];

function tokenName(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return null;
}

function idsOf(op: string, ids: unknown): number[] {
  if (ids instanceof Tensor) {
    if (ids.shape.length > 1) throw argError(op, `ids must be one sequence (a 1-D tensor), got shape [${ids.shape}]`);
    return Array.from(ids.dataSync() as ArrayLike<number | bigint>, (v) => Number(v));
  }
  if (!Array.isArray(ids) || !ids.every((v) => Number.isInteger(v) || typeof v === 'bigint'))
    throw argError(op, `ids must be an array of integers or a 1-D tensor, got ${describe(ids)}`);
  return ids.map(Number);
}

export class Tokenizer {
  readonly #tok: HfTokenizer;
  readonly #specialIds: Set<number>;
  readonly #size: number;
  /** The special tokens by content (null where the tokenizer has none). */
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  readonly padToken: string | null;
  readonly unkToken: string | null;

  private constructor(json: Record<string, unknown>, options: TokenizerOptions) {
    const op = 'Tokenizer';
    if (json === null || typeof json !== 'object' || Array.isArray(json))
      throw argError(
        op,
        `use Tokenizer.fromFile(path) or Tokenizer.fromJSON(json); got ${describe(json)} where a parsed tokenizer.json belongs`,
      );
    const o = checkOptions(op, options, ['config', 'bosToken', 'eosToken', 'padToken', 'unkToken']);
    const config = o.config ?? {};
    if (config === null || typeof config !== 'object' || Array.isArray(config))
      throw argError(op, `config must be an object (tokenizer_config.json's contents), got ${describe(config)}`);
    const model = json.model as Record<string, unknown> | undefined;
    if (!model || typeof model !== 'object' || typeof model.type !== 'string')
      throw flockError('ERR_FORMAT', op, 'not a tokenizer.json: it has no model with a type');
    // Decoding gives back exactly the text (as the Rust library) unless the config asks for
    // transformers' clean-up (" ." → "."), which the JS library would otherwise do by default.
    const cfg = { ...config, clean_up_tokenization_spaces: config.clean_up_tokenization_spaces ?? false };
    try {
      this.#tok = new HfTokenizer(json, cfg);
    } catch (e) {
      throw flockError('ERR_FORMAT', op, `cannot build the tokenizer: ${(e as Error).message}`);
    }
    const vocab = this.#tok.get_vocab(true);
    let maxId = -1;
    for (const id of vocab.values()) if (id > maxId) maxId = id;
    this.#size = maxId + 1;
    this.#specialIds = new Set(Array.from(this.#tok.get_added_tokens_decoder()).flatMap(([id, t]) => (t.special ? [id] : [])));

    const fromConfig = Object.fromEntries(CONFIG_NAMES.map((k) => [k, tokenName(config[k])]));
    const has = (t: string | null | undefined) => (t != null && vocab.has(t) ? t : null);
    const pick = (name: keyof SpecialTokenOptions, configured: string | null, guess: () => string | null): string | null => {
      const given = o[name];
      if (given === null) return null;
      if (given !== undefined) {
        if (typeof given !== 'string' || !vocab.has(given)) throw argError(op, `${name} ${describe(given)} is not in the vocabulary`);
        return given;
      }
      return has(configured) ?? guess();
    };
    const special = [...this.#specialIds].map((id) => this.#tok.id_to_token(id) as string);
    this.unkToken = pick('unkToken', fromConfig.unk_token, () => has(model.unk_token as string | null));
    this.bosToken = pick('bosToken', fromConfig.bos_token, () => BOS_GUESSES.find((t) => special.includes(t)) ?? null);
    this.eosToken = pick('eosToken', fromConfig.eos_token, () => EOS_GUESSES.find((t) => special.includes(t)) ?? null);
    this.padToken = pick('padToken', fromConfig.pad_token, () => has('<pad>') ?? has('[PAD]'));
  }

  /** A tokenizer from a parsed tokenizer.json. */
  static fromJSON(json: Record<string, unknown>, options: TokenizerOptions = {}): Tokenizer {
    if (json === null || typeof json !== 'object' || Array.isArray(json))
      throw argError('Tokenizer.fromJSON', `json must be tokenizer.json's contents (an object), got ${describe(json)}`);
    return new Tokenizer(json, options);
  }

  /**
   * Reads `path` — a tokenizer.json, or a model directory holding one — and the
   * tokenizer_config.json beside it when there is one (unless `options.config` is given).
   * ERR_NOT_FOUND when the file is missing, ERR_FORMAT when it is not a tokenizer.json.
   */
  static async fromFile(path: string, options: TokenizerOptions = {}): Promise<Tokenizer> {
    const [file, cfgFile] = locate('Tokenizer.fromFile', path);
    const text = await readFile(file, 'utf8').catch((e: Error) => {
      throw flockError('ERR_NOT_FOUND', 'Tokenizer.fromFile', `cannot read ${file}: ${e.message}`);
    });
    const json = parse('Tokenizer.fromFile', file, text);
    const config =
      options.config ??
      (await readFile(cfgFile, 'utf8').then(
        (s) => parse('Tokenizer.fromFile', cfgFile, s),
        () => undefined,
      ));
    return new Tokenizer(json, { ...options, config });
  }

  /** Blocking twin of {@link fromFile}. */
  static fromFileSync(path: string, options: TokenizerOptions = {}): Tokenizer {
    const op = 'Tokenizer.fromFileSync';
    const [file, cfgFile] = locate(op, path);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw flockError('ERR_NOT_FOUND', op, `cannot read ${file}: ${(e as Error).message}`);
    }
    const json = parse(op, file, text);
    let config = options.config;
    if (config === undefined) {
      try {
        config = parse(op, cfgFile, readFileSync(cfgFile, 'utf8'));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
    return new Tokenizer(json, { ...options, config });
  }

  /** The number of ids: the vocabulary and added tokens (Hugging Face's `len(tokenizer)`). */
  get vocabSize(): number {
    return this.#size;
  }

  get bosTokenId(): number | null {
    return this.tokenToId(this.bosToken);
  }
  get eosTokenId(): number | null {
    return this.tokenToId(this.eosToken);
  }
  get padTokenId(): number | null {
    return this.tokenToId(this.padToken);
  }
  get unkTokenId(): number | null {
    return this.tokenToId(this.unkToken);
  }

  /** The ids of every special token (those decode skips with `skipSpecialTokens`). */
  get specialTokenIds(): number[] {
    return [...this.#specialIds].sort((a, b) => a - b);
  }

  /** A token's id, or null when it is not in the vocabulary. */
  tokenToId(token: string | null): number | null {
    if (token === null) return null;
    return this.#tok.token_to_id(token) ?? null;
  }

  /** An id's token, or null when no token has it. */
  idToToken(id: number): string | null {
    return this.#tok.id_to_token(id) ?? null;
  }

  /** The text as token strings (GPT-2's show bytes as printable characters: 'Ġworld'). */
  tokenize(text: string, options: EncodeOptions = {}): string[] {
    const add = this.#add('Tokenizer.tokenize', text, options);
    return this.#tok.tokenize(text, { add_special_tokens: add });
  }

  /** The text's token ids. */
  encode(text: string, options: EncodeOptions = {}): number[] {
    const add = this.#add('Tokenizer.encode', text, options);
    return this.#tok.encode(text, { add_special_tokens: add }).ids;
  }

  /** {@link encode} as an i64 tensor of shape [1, length], ready for a model. */
  encodeTensor(text: string, options: EncodeOptions & { device?: string } = {}): Tensor {
    const { device, ...rest } = checkOptions('Tokenizer.encodeTensor', options, ['addSpecialTokens', 'device']);
    const ids = this.encode(text, rest);
    return tensor(Float64Array.from(ids), { dtype: 'i64', shape: [1, ids.length], device });
  }

  /**
   * Several texts padded to one length with the pad token (ERR_ARG when the tokenizer has none:
   * pass `padToken`, often the eos token, to fromFile), with the attention mask.
   */
  encodeBatch(texts: string[], options: BatchEncodeOptions = {}): BatchEncoding {
    const op = 'Tokenizer.encodeBatch';
    const o = checkOptions(op, options, ['addSpecialTokens', 'paddingSide', 'maxLength', 'padTo']);
    if (!Array.isArray(texts) || texts.length === 0 || !texts.every((t) => typeof t === 'string'))
      throw argError(op, `texts must be a non-empty array of strings, got ${describe(texts)}`);
    const side = checkChoice(op, 'paddingSide', o.paddingSide ?? 'right', ['left', 'right']);
    const maxLength = o.maxLength === undefined ? Infinity : checkInt(op, 'maxLength', o.maxLength, 1);
    const rows = texts.map((t) => this.encode(t, { addSpecialTokens: o.addSpecialTokens }).slice(0, maxLength));
    const longest = Math.max(...rows.map((r) => r.length));
    const len = o.padTo === undefined ? longest : checkInt(op, 'padTo', o.padTo, 0);
    if (len < longest) throw argError(op, `padTo ${len} is shorter than the longest sequence (${longest} tokens)`);
    const pad = this.padTokenId;
    if (pad === null && rows.some((r) => r.length < len))
      throw argError(op, 'the tokenizer has no pad token; give one: Tokenizer.fromFile(path, { padToken: tok.eosToken })');
    const inputIds: number[][] = [];
    const attentionMask: number[][] = [];
    for (const r of rows) {
      const fill = new Array<number>(len - r.length).fill(pad as number);
      const ones = new Array<number>(r.length).fill(1);
      const zeros = new Array<number>(len - r.length).fill(0);
      inputIds.push(side === 'left' ? [...fill, ...r] : [...r, ...fill]);
      attentionMask.push(side === 'left' ? [...zeros, ...ones] : [...ones, ...zeros]);
    }
    return { inputIds, attentionMask };
  }

  /** {@link encodeBatch} as i64 tensors of shape [batch, length]. */
  encodeBatchTensor(texts: string[], options: BatchEncodeOptions & { device?: string } = {}): BatchTensors {
    const { device, ...rest } = checkOptions('Tokenizer.encodeBatchTensor', options, [
      'addSpecialTokens',
      'paddingSide',
      'maxLength',
      'padTo',
      'device',
    ]);
    const b = this.encodeBatch(texts, rest);
    const shape = [b.inputIds.length, b.inputIds[0].length];
    return {
      inputIds: tensor(Float64Array.from(b.inputIds.flat()), { dtype: 'i64', shape, device }),
      attentionMask: tensor(Float64Array.from(b.attentionMask.flat()), { dtype: 'i64', shape, device }),
    };
  }

  /** The text of `ids` (an array or a 1-D tensor). */
  decode(ids: number[] | Tensor, options: DecodeOptions = {}): string {
    const op = 'Tokenizer.decode';
    const o = checkOptions(op, options, ['skipSpecialTokens']);
    const skip = checkBool(op, 'skipSpecialTokens', o.skipSpecialTokens ?? false);
    const list = idsOf(op, ids);
    const bad = list.find((id) => id < 0 || id >= this.#size);
    if (bad !== undefined) throw flockError('ERR_INDEX', op, `id ${bad} is out of range for a vocabulary of ${this.#size}`);
    return this.#tok.decode(list, { skip_special_tokens: skip });
  }

  /** {@link decode} of every row (arrays, or a 2-D tensor). */
  decodeBatch(rows: number[][] | Tensor, options: DecodeOptions = {}): string[] {
    if (rows instanceof Tensor) {
      if (rows.shape.length !== 2) throw argError('Tokenizer.decodeBatch', `rows must be a 2-D tensor, got shape [${rows.shape}]`);
      const flat = idsOf('Tokenizer.decodeBatch', rows.reshape([-1]));
      const n = rows.shape[1];
      return Array.from({ length: rows.shape[0] }, (_, i) => this.decode(flat.slice(i * n, (i + 1) * n), options));
    }
    if (!Array.isArray(rows))
      throw argError('Tokenizer.decodeBatch', `rows must be an array of id arrays or a 2-D tensor, got ${describe(rows)}`);
    return rows.map((r) => this.decode(r, options));
  }

  #add(op: string, text: unknown, options: EncodeOptions): boolean {
    if (typeof text !== 'string') throw argError(op, `text must be a string, got ${describe(text)}`);
    const o = checkOptions(op, options, ['addSpecialTokens']);
    return checkBool(op, 'addSpecialTokens', o.addSpecialTokens ?? true);
  }
}

/** tokenizer.json's path and tokenizer_config.json's for a file or directory `path`. */
function locate(op: string, path: string): [string, string] {
  if (typeof path !== 'string' || path === '') throw argError(op, `path must be a non-empty string, got ${describe(path)}`);
  let file = path;
  try {
    if (statSync(path).isDirectory()) file = join(path, 'tokenizer.json');
  } catch {
    throw flockError('ERR_NOT_FOUND', op, `no such file or directory: ${path}`);
  }
  return [file, join(dirname(file), 'tokenizer_config.json')];
}

function parse(op: string, path: string, text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
    return v;
  } catch (e) {
    throw flockError('ERR_FORMAT', op, `${path}: ${(e as Error).message}`);
  }
}
