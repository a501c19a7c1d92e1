/**
 * Text data: a character-level tokenizer, the text of Debian's `fortunes` package as a corpus, and
 * a dataset of fixed-length token windows (input and next-token target) for language models.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import type { Dataset } from './dataset';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkInt, checkPath } from '../validate';

/** Maps each distinct character (Unicode code point) of a corpus to an id, in sorted order. */
export class CharTokenizer {
  readonly chars: readonly string[];
  readonly #ids: Map<string, number>;

  constructor(chars: readonly string[]) {
    if (!Array.isArray(chars) || chars.some((c) => typeof c !== 'string' || [...c].length !== 1))
      throw argError('CharTokenizer', `chars must be an array of single characters, got ${describe(chars)}`);
    if (new Set(chars).size !== chars.length) throw argError('CharTokenizer', 'chars must not repeat');
    this.chars = [...chars];
    this.#ids = new Map(this.chars.map((c, i) => [c, i]));
  }

  /** The tokenizer whose vocabulary is every character of `text`, sorted by code point. */
  static fit(text: string): CharTokenizer {
    if (typeof text !== 'string') throw argError('CharTokenizer.fit', `text must be a string, got ${describe(text)}`);
    return new CharTokenizer([...new Set(text)].sort((a, b) => (a.codePointAt(0) as number) - (b.codePointAt(0) as number)));
  }

  get vocabSize(): number {
    return this.chars.length;
  }

  /** The ids of `text`'s characters; a character outside the vocabulary is an error that names it. */
  encode(text: string): Int32Array {
    if (typeof text !== 'string') throw argError('CharTokenizer.encode', `text must be a string, got ${describe(text)}`);
    const cps = [...text];
    const out = new Int32Array(cps.length);
    for (let i = 0; i < cps.length; i++) {
      const id = this.#ids.get(cps[i]);
      if (id === undefined)
        throw flockError('ERR_ARG', 'CharTokenizer.encode', `character ${JSON.stringify(cps[i])} at ${i} is not in the vocabulary`);
      out[i] = id;
    }
    return out;
  }

  /** The text of `ids` (numbers, a typed array or a 1-D integer tensor read synchronously). */
  decode(ids: ArrayLike<number | bigint> | Tensor): string {
    if (typeof ids !== 'object' || ids === null || !(ids instanceof Tensor || typeof ids.length === 'number'))
      throw argError('CharTokenizer.decode', `ids must be an array, a typed array or a tensor of ids, got ${describe(ids)}`);
    const list: ArrayLike<number | bigint> = 'dataSync' in ids ? (ids.dataSync() as ArrayLike<number | bigint>) : ids;
    let s = '';
    for (let i = 0; i < list.length; i++) {
      const id = Number(list[i]);
      if (!Number.isInteger(id) || id < 0 || id >= this.chars.length)
        throw flockError(
          'ERR_INDEX',
          'CharTokenizer.decode',
          `id ${describe(list[i])} at ${i} is out of range for ${this.chars.length} characters`,
        );
      s += this.chars[id];
    }
    return s;
  }

  toJSON(): { type: 'char'; chars: string[] } {
    return { type: 'char', chars: [...this.chars] };
  }

  static fromJSON(json: unknown): CharTokenizer {
    const j = json as { type?: unknown; chars?: unknown };
    if (json === null || typeof json !== 'object' || j.type !== 'char' || !Array.isArray(j.chars))
      throw flockError('ERR_DATA', 'CharTokenizer.fromJSON', `expected { type: 'char', chars: [...] }, got ${describe(json)}`);
    return new CharTokenizer(j.chars as string[]);
  }

  /** Writes the vocabulary as JSON. */
  save(path: string): void {
    writeFileSync(checkPath('CharTokenizer.save', 'path', path), JSON.stringify(this.toJSON()));
  }

  static load(path: string): CharTokenizer {
    checkPath('CharTokenizer.load', 'path', path);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw flockError(
        code === 'ENOENT' ? 'ERR_NOT_FOUND' : 'ERR_IO',
        'CharTokenizer.load',
        `cannot read ${path}: ${(e as Error).message}`,
      );
    }
    try {
      return CharTokenizer.fromJSON(JSON.parse(text));
    } catch (e) {
      if (e instanceof SyntaxError) throw flockError('ERR_DATA', 'CharTokenizer.load', `${path} is not JSON: ${e.message}`);
      throw e;
    }
  }
}

export const FORTUNES_DEFAULT_DIR = '/usr/share/games/fortunes';

/**
 * The fortunes of Debian's `fortunes` package as one text: every cookie file of `dir` (default
 * $FLOCKML_FORTUNES_DIR or the package's location), sorted by name, with the `%` separator lines
 * turned into blank lines. Missing files are an error that names the package.
 */
export function fortunesCorpus(dir = process.env.FLOCKML_FORTUNES_DIR ?? FORTUNES_DEFAULT_DIR): string {
  const op = 'fortunesCorpus';
  const install = "install Debian's package `fortunes` (apt-get install fortunes) or set FLOCKML_FORTUNES_DIR";
  if (!existsSync(dir)) throw flockError('ERR_NOT_FOUND', op, `no fortunes at ${dir}: ${install}`);
  const files = readdirSync(dir, { withFileTypes: true })
    .filter((f) => f.isFile() && !f.name.includes('.'))
    .map((f) => f.name)
    .sort();
  if (!files.length) throw flockError('ERR_NOT_FOUND', op, `${dir} holds no fortune files: ${install}`);
  return files
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('%\n')
    .split(/^%\n/m)
    .map((s) => s.trimEnd())
    .filter((s) => s.length > 0)
    .join('\n\n');
}

const INT_ARRAYS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array];

/** An array of integer token ids, plain or typed. */
function isTokenList(v: unknown): v is ArrayLike<number> {
  return INT_ARRAYS.some((c) => v instanceof c) || (Array.isArray(v) && v.every((t) => typeof t === 'number' && Number.isInteger(t)));
}

/**
 * Fixed-length windows of a token sequence: item i is [x, y], both i64 [blockSize], with x the
 * tokens at i·stride … and y the same shifted by one (each position's next token).
 */
export class TokenWindows implements Dataset<Tensor[]> {
  readonly tokens: Int32Array;
  readonly blockSize: number;
  readonly stride: number;

  constructor(tokens: ArrayLike<number>, blockSize: number, options?: { stride?: number }) {
    const op = 'TokenWindows';
    if (!isTokenList(tokens)) throw argError(op, `tokens must be an array of integers or an integer typed array, got ${describe(tokens)}`);
    this.blockSize = checkInt(op, 'blockSize', blockSize, 1);
    this.stride = checkInt(op, 'stride', checkOptions(op, options, ['stride']).stride ?? 1, 1);
    this.tokens = Int32Array.from(tokens);
    if (this.tokens.length < blockSize + 1)
      throw flockError('ERR_SHAPE', op, `${this.tokens.length} tokens are too few for one window of ${blockSize} (+1 for the target)`);
  }

  get length(): number {
    return Math.floor((this.tokens.length - this.blockSize - 1) / this.stride) + 1;
  }

  get(index: number): Tensor[] {
    return this.getBatch([index]).map((t) => t.squeeze(0));
  }

  /** Many windows as [x, y] of shape [n, blockSize], built on the host in one pass. */
  getBatch(indices: number[]): Tensor[] {
    const b = this.blockSize;
    const x = new BigInt64Array(indices.length * b);
    const y = new BigInt64Array(indices.length * b);
    indices.forEach((index, r) => {
      if (!Number.isInteger(index) || index < 0 || index >= this.length)
        throw flockError(
          Number.isInteger(index) ? 'ERR_INDEX' : 'ERR_ARG',
          'TokenWindows.get',
          `index ${describe(index)} is out of range for ${this.length} windows`,
        );
      const at = index * this.stride;
      for (let j = 0; j < b; j++) {
        x[r * b + j] = BigInt(this.tokens[at + j]);
        y[r * b + j] = BigInt(this.tokens[at + j + 1]);
      }
    });
    return [tensor(x, { shape: [indices.length, b] }), tensor(y, { shape: [indices.length, b] })];
  }
}

/** Windows of a text file's characters, encoded by `tokenizer` (fitted on the file when omitted). */
export function textWindows(
  path: string,
  blockSize: number,
  tokenizer?: CharTokenizer,
): { dataset: TokenWindows; tokenizer: CharTokenizer } {
  checkPath('textWindows', 'path', path);
  if (tokenizer !== undefined && !(tokenizer instanceof CharTokenizer))
    throw argError('textWindows', `tokenizer must be a CharTokenizer, got ${describe(tokenizer)}`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw flockError(code === 'ENOENT' ? 'ERR_NOT_FOUND' : 'ERR_IO', 'textWindows', `cannot read ${path}: ${(e as Error).message}`);
  }
  const tok = tokenizer ?? CharTokenizer.fit(text);
  return { dataset: new TokenWindows(tok.encode(text), blockSize), tokenizer: tok };
}
