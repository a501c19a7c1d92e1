/**
 * fl.utils.SummaryWriter: TensorBoard event files. Each record is TFRecord-framed (length,
 * masked CRC-32C of the length, an `Event` protobuf, masked CRC-32C of it). Writes go out through
 * libuv's thread pool at explicit offsets, so the event loop never waits on the disk; at process
 * exit whatever is not known to be on disk is written again synchronously at the same offsets.
 */
import { closeSync, mkdirSync, openSync, write, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { argError, describe, flockError } from '../errors';
import { Tensor } from '../tensor';
import { checkInt } from '../validate';

// The few TensorBoard messages used, with tensorflow/core/util/event.proto's field numbers.
const PROTO = `
syntax = "proto3";
message Event { double wall_time = 1; int64 step = 2; oneof what { string file_version = 3; Summary summary = 5; } }
message Summary {
  message Value { string tag = 1; float simple_value = 2; HistogramProto histo = 5; TensorProto tensor = 8; SummaryMetadata metadata = 9; }
  repeated Value value = 1;
}
message HistogramProto {
  double min = 1; double max = 2; double num = 3; double sum = 4; double sum_squares = 5;
  repeated double bucket_limit = 6; repeated double bucket = 7;
}
message SummaryMetadata { message PluginData { string plugin_name = 1; bytes content = 2; } PluginData plugin_data = 1; }
message TensorShapeProto { message Dim { int64 size = 1; } repeated Dim dim = 2; }
message TensorProto { int32 dtype = 1; TensorShapeProto tensor_shape = 2; repeated bytes string_val = 8; }
`;
const root = protobuf.parse(PROTO).root;
/** @internal the Event message type, for readers in tests. */
export const EventMessage = root.lookupType('Event');
const DT_STRING = 7;

// CRC-32C (Castagnoli), table-driven; TFRecord stores it masked so a CRC of CRCs stays distinctive.
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

export function crc32c(data: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < data.length; i++) c = CRC_TABLE[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function maskedCrc32c(data: Uint8Array): number {
  const c = crc32c(data);
  return (((c >>> 15) | (c << 17)) + 0xa282ead8) >>> 0;
}

/** One TFRecord: uint64 length, masked CRC of the length, data, masked CRC of the data (little-endian). */
function frameRecord(data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length + 4);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc32c(out.subarray(0, 8)), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}

function histogram(values: ArrayLike<number>, bins: number): Record<string, unknown> {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let sum = 0;
  let sumSquares = 0;
  let n = 0;
  for (let i = 0; i < values.length; i++) {
    const v = Number(values[i]);
    if (!Number.isFinite(v)) continue;
    n++;
    sum += v;
    sumSquares += v * v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (n === 0) return { min: 0, max: 0, num: 0, sum: 0, sumSquares: 0, bucketLimit: [], bucket: [] };
  const width = max > min ? (max - min) / bins : 1;
  const count = max > min ? bins : 1;
  const bucket = new Array<number>(count).fill(0);
  for (let i = 0; i < values.length; i++) {
    const v = Number(values[i]);
    if (Number.isFinite(v)) bucket[Math.min(count - 1, Math.floor((v - min) / width))]++;
  }
  const bucketLimit = bucket.map((_, i) => (i === count - 1 ? max : min + (i + 1) * width));
  return { min, max, num: n, sum, sumSquares, bucketLimit, bucket };
}

/**
 * Writes scalars, histograms and text for TensorBoard (`tensorboard --logdir <logdir>`).
 *
 *   const w = new fl.utils.SummaryWriter('runs/exp1');
 *   w.addScalar('loss/train', loss, step);
 *   await w.close();
 */
export class SummaryWriter {
  readonly logdir: string;
  /** The event file's path: `<logdir>/events.out.tfevents.<seconds>.<host>`. */
  readonly path: string;
  #fd: number;
  #offset = 0;
  // Records in call order; a histogram of a tensor is a promise until its values are read.
  #queue: (Buffer | Promise<Buffer>)[] = [];
  #inFlight = new Map<number, Buffer>();
  #draining: Promise<void> = Promise.resolve();
  #scheduled = false;
  #closed = false;
  #error: Error | null = null;
  #onExit = () => this.#flushSyncAtExit();

  constructor(logdir: string) {
    if (typeof logdir !== 'string' || logdir === '')
      throw argError('SummaryWriter', `logdir must be a non-empty string, got ${describe(logdir)}`);
    this.logdir = logdir;
    try {
      mkdirSync(logdir, { recursive: true });
      this.path = join(logdir, `events.out.tfevents.${Math.floor(Date.now() / 1000)}.${hostname()}`);
      this.#fd = openSync(this.path, 'w');
    } catch (e) {
      throw flockError('ERR_IO', 'SummaryWriter', `cannot create an event file in ${logdir}: ${(e as Error).message}`);
    }
    process.on('exit', this.#onExit);
    this.#push(this.#event({ fileVersion: 'brain.Event:2' }, 0));
  }

  /** A scalar (a number, or a one-element tensor) at `step`. */
  addScalar(tag: string, value: number | Tensor, step: number): void {
    this.#check('addScalar', tag, step);
    if (value instanceof Tensor) {
      this.#push(value.item().then((v) => this.#event({ summary: { value: [{ tag, simpleValue: v }] } }, step)));
      return;
    }
    if (typeof value !== 'number') throw argError('addScalar', `value must be a number or a tensor, got ${describe(value)}`);
    this.#push(this.#event({ summary: { value: [{ tag, simpleValue: value }] } }, step));
  }

  /** A histogram of a tensor's or an array's values (30 equal-width buckets between min and max). */
  addHistogram(tag: string, values: Tensor | ArrayLike<number>, step: number): void {
    this.#check('addHistogram', tag, step);
    const make = (v: ArrayLike<number>) => this.#event({ summary: { value: [{ tag, histo: histogram(v, 30) }] } }, step);
    if (values instanceof Tensor) this.#push(values.data().then((d) => make(d as ArrayLike<number>)));
    else if (values !== null && typeof values === 'object' && typeof (values as ArrayLike<number>).length === 'number')
      this.#push(make(values));
    else throw argError('addHistogram', `values must be a tensor or an array of numbers, got ${describe(values)}`);
  }

  /** Text (Markdown) shown in TensorBoard's Text tab. */
  addText(tag: string, text: string, step: number): void {
    this.#check('addText', tag, step);
    if (typeof text !== 'string') throw argError('addText', `text must be a string, got ${describe(text)}`);
    const value = {
      tag,
      metadata: { pluginData: { pluginName: 'text', content: new Uint8Array(0) } },
      tensor: { dtype: DT_STRING, tensorShape: { dim: [{ size: 1 }] }, stringVal: [Buffer.from(text, 'utf8')] },
    };
    this.#push(this.#event({ summary: { value: [value] } }, step));
  }

  /** Resolves once everything added so far is written. */
  flush(): Promise<void> {
    this.#schedule(true);
    return this.#draining.then((): Promise<void> | undefined => {
      if (this.#queue.length > 0) return this.flush();
      if (this.#error) throw this.#error;
      return undefined;
    });
  }

  /** Flushes and closes the file; adding afterwards throws. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.#closed = true;
    process.off('exit', this.#onExit);
    closeSync(this.#fd);
  }

  #check(op: string, tag: string, step: number): void {
    if (this.#closed) throw flockError('ERR_ARG', op, 'the SummaryWriter is closed');
    if (typeof tag !== 'string' || tag === '') throw argError(op, `tag must be a non-empty string, got ${describe(tag)}`);
    checkInt(op, 'step', step);
  }

  #event(what: Record<string, unknown>, step: number): Buffer {
    const msg = EventMessage.fromObject({ wallTime: Date.now() / 1000, step, ...what });
    return frameRecord(EventMessage.encode(msg).finish());
  }

  #push(record: Buffer | Promise<Buffer>): void {
    this.#queue.push(record);
    this.#schedule(false);
  }

  #schedule(now: boolean): void {
    if (this.#scheduled && !now) return;
    this.#scheduled = true;
    this.#draining = this.#draining.then(() => this.#drain());
  }

  // Writes the queued records in order; a record still being read (a tensor) holds back those after it.
  async #drain(): Promise<void> {
    this.#scheduled = false;
    while (this.#queue.length > 0) {
      const batch: Buffer[] = [];
      while (this.#queue.length > 0 && this.#queue[0] instanceof Buffer) batch.push(this.#queue.shift() as Buffer);
      if (batch.length === 0) {
        try {
          this.#queue[0] = await this.#queue[0];
        } catch (e) {
          this.#queue.shift();
          this.#error ??= e as Error;
        }
        continue;
      }
      const buf = Buffer.concat(batch);
      const at = this.#offset;
      this.#offset += buf.length;
      this.#inFlight.set(at, buf);
      await new Promise<void>((resolve) =>
        write(this.#fd, buf, 0, buf.length, at, (err) => {
          if (err) this.#error ??= flockError('ERR_IO', 'SummaryWriter', `writing ${this.path}: ${err.message}`);
          else this.#inFlight.delete(at);
          resolve();
        }),
      );
    }
  }

  #flushSyncAtExit(): void {
    if (this.#closed) return;
    try {
      for (const [at, buf] of this.#inFlight) writeSync(this.#fd, buf, 0, buf.length, at);
      let at = this.#offset;
      for (const r of this.#queue) {
        if (!(r instanceof Buffer)) break; // a tensor not yet read cannot be waited for at exit
        writeSync(this.#fd, r, 0, r.length, at);
        at += r.length;
      }
      closeSync(this.#fd);
    } catch {
      // the process is exiting: nobody is left to report to
    }
  }
}
