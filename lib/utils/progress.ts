/**
 * fl.utils.progress: a progress bar around any iterable (arrays, generators, DataLoaders). On a
 * terminal it redraws in place (cli-progress draws it); elsewhere (CI logs, pipes) it prints a
 * line every few seconds and one at the end.
 */
import { SingleBar } from 'cli-progress';
import { argError, checkOptions, describe } from '../errors';
import { checkBool, checkInt, checkNumber } from '../validate';

export interface ProgressOptions {
  /** Number of items; taken from `length` or `size` of the iterable when it has one. */
  total?: number;
  /** A label in front of the bar. */
  desc?: string;
  /** Print only on RANK 0 (other ranks iterate silently). Default false. */
  rank0Only?: boolean;
  /** Where to draw; default process.stderr. */
  stream?: NodeJS.WritableStream;
  /** Off a terminal, ms between log lines (default 2000). */
  logIntervalMs?: number;
}

type Postfix = Record<string, number | string>;

function formatPostfix(p: Postfix): string {
  return Object.entries(p)
    .map(([k, v]) => `${k}=${typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(4)) : v}`)
    .join(', ');
}

/** A bar over `iterable`; iterate it with `for` or `for await`. */
export class Progress<T> implements Iterable<T>, AsyncIterable<T> {
  readonly total: number | undefined;
  readonly desc: string;
  #source: Iterable<T> | AsyncIterable<T>;
  #bar: SingleBar | null;
  #count = 0;
  #started = 0;
  #postfix: Postfix = {};
  #closed = false;

  /** @internal use fl.utils.progress() */
  constructor(iterable: Iterable<T> | AsyncIterable<T>, options: ProgressOptions = {}) {
    const op = 'progress';
    const o = checkOptions(op, options, ['total', 'desc', 'rank0Only', 'stream', 'logIntervalMs']);
    if (iterable === null || typeof iterable !== 'object' || !(Symbol.iterator in iterable || Symbol.asyncIterator in iterable))
      throw argError(op, `expected an iterable or async iterable, got ${describe(iterable)}`);
    this.#source = iterable;
    const sized = iterable as { length?: unknown; size?: unknown };
    // A DataLoader over a stream of unknown length throws from its length getter: no total then.
    const size = (key: 'length' | 'size') => {
      try {
        return sized[key];
      } catch {
        return undefined;
      }
    };
    const length = size('length');
    const implied = typeof length === 'number' ? length : typeof size('size') === 'number' ? (size('size') as number) : undefined;
    this.total = o.total === undefined ? implied : checkInt(op, 'total', o.total);
    if (o.desc !== undefined && typeof o.desc !== 'string') throw argError(op, `desc must be a string, got ${describe(o.desc)}`);
    this.desc = o.desc ?? '';
    const rank0Only = o.rank0Only === undefined ? false : checkBool(op, 'rank0Only', o.rank0Only);
    const interval = o.logIntervalMs === undefined ? 2000 : checkNumber(op, 'logIntervalMs', o.logIntervalMs, { min: 0 });
    if (o.stream !== undefined && (o.stream === null || typeof (o.stream as { write?: unknown }).write !== 'function'))
      throw argError(op, `stream must be a writable stream, got ${describe(o.stream)}`);
    const silent = rank0Only && Number(process.env.RANK ?? 0) !== 0;
    this.#bar = silent
      ? null
      : new SingleBar({
          stream: o.stream ?? process.stderr,
          format: (_opts, params, payload: { line: string }) => this.#render(params.value, payload.line),
          noTTYOutput: true,
          notTTYSchedule: interval,
          hideCursor: false,
          clearOnComplete: false,
          stopOnComplete: false,
          etaBuffer: 50,
        });
  }

  /** Values shown after the bar, e.g. `{ loss: 0.31 }`; merged into what was set before. */
  setPostfix(values: Postfix): void {
    if (values === null || typeof values !== 'object') throw argError('progress.setPostfix', `expected an object, got ${describe(values)}`);
    Object.assign(this.#postfix, values);
    this.#bar?.update(this.#count, { line: formatPostfix(this.#postfix) });
  }

  /** Advances by `n` items (iteration does this itself). */
  update(n = 1): void {
    this.#count += n;
    this.#bar?.update(this.#count, { line: formatPostfix(this.#postfix) });
  }

  /** Draws the final state and ends the line; iteration does this when it ends or breaks. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#bar) {
      this.#bar.update(this.#count, { line: formatPostfix(this.#postfix) });
      this.#bar.stop();
    }
  }

  #begin(): void {
    this.#started = performance.now();
    this.#bar?.start(this.total ?? 0, 0, { line: '' });
  }

  #render(value: number, postfix: string): string {
    const secs = (performance.now() - this.#started) / 1000;
    const rate = secs > 0 ? value / secs : 0;
    const total = this.total;
    const head = this.desc ? `${this.desc}: ` : '';
    const width = 30;
    let bar = '';
    let eta = '?';
    if (total !== undefined && total > 0) {
      const filled = Math.min(width, Math.round((value / total) * width));
      bar = `|${'█'.repeat(filled)}${'░'.repeat(width - filled)}| `;
      if (rate > 0) eta = clock(Math.max(0, (total - value) / rate));
    }
    const counts = total !== undefined ? `${value}/${total}` : `${value}`;
    return `${head}${bar}${counts} [${clock(secs)}<${eta}, ${rate.toFixed(2)} it/s]${postfix ? ` ${postfix}` : ''}`;
  }

  *[Symbol.iterator](): Iterator<T> {
    const src = this.#source;
    if (!(Symbol.iterator in src)) throw argError('progress', 'an async iterable needs `for await`');
    this.#begin();
    try {
      for (const v of src as Iterable<T>) {
        yield v;
        this.update();
      }
    } finally {
      this.close();
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    this.#begin();
    try {
      if (Symbol.asyncIterator in this.#source) {
        for await (const v of this.#source as AsyncIterable<T>) {
          yield v;
          this.update();
        }
      } else {
        for (const v of this.#source as Iterable<T>) {
          yield v;
          this.update();
        }
      }
    } finally {
      this.close();
    }
  }
}

function clock(secs: number): string {
  const s = Math.round(secs);
  const mm = String(Math.floor(s / 60) % 60).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return s >= 3600 ? `${Math.floor(s / 3600)}:${mm}:${ss}` : `${mm}:${ss}`;
}

/**
 * Wraps an iterable with a progress bar:
 *
 *   const bar = fl.utils.progress(loader, { desc: 'epoch 1' });
 *   for await (const [x, y] of bar) { ...; bar.setPostfix({ loss }); }
 */
export function progress<T>(iterable: Iterable<T> | AsyncIterable<T>, options?: ProgressOptions): Progress<T> {
  return new Progress(iterable, options ?? {});
}
