/**
 * fl.profiler: records what a training step did, where and when. Kernel intervals come from the
 * streams themselves (the CPU worker's clock, CUDA events); the JS side adds each op call's host
 * time and shapes, collectives' intervals, memory counters and user ranges. Nothing is wrapped or
 * recorded until a profiler starts, and everything is restored when it stops.
 */
import { flockError, checkOptions, argError, describe } from '../errors';
import { native } from '../native';
import { checkBool, checkInt } from '../validate';
import type { HandleMeta, NativeTensor } from '../../types/native';
import { binaryOpNames, reduceOpNames, unaryOpNames } from '../../types/op_codes';
import { type KeyAverages, keyAverages } from './key_averages';
import { type ChromeTrace, type TraceEvent, TID_COMM, TID_HOST, metadataEvents, streamTid, writeTrace } from './trace';

export type Activity = 'cpu' | 'cuda' | 'comm';
const ACTIVITIES: readonly Activity[] = ['cpu', 'cuda', 'comm'];

/** Which steps are recorded: `wait` steps skipped, `warmup` steps run with recording on but dropped, then `active` recorded. */
export interface ProfileSchedule {
  wait?: number;
  warmup?: number;
  active: number;
}

export interface ProfileOptions {
  /** What to record (default all): 'cpu' CPU stream kernels and host op calls, 'cuda' CUDA stream kernels, 'comm' collectives. */
  activities?: Activity[];
  /** Put input shapes in each op's args (default false). */
  recordShapes?: boolean;
  /** Sample fl.memory() into counter tracks (default false). */
  profileMemory?: boolean;
  /** Record only some of the steps marked by `step()`; without it every step between start and stop. */
  schedule?: ProfileSchedule;
  /** The trace's process id (default: the RANK environment variable, else 0). */
  rank?: number;
}

const COLLECTIVES: Record<string, string> = {
  pgAllReduce: 'allReduce',
  pgBroadcast: 'broadcast',
  pgAllGather: 'allGather',
  pgReduceScatter: 'reduceScatter',
  pgSend: 'send',
  pgRecv: 'recv',
  pgBarrier: 'barrier',
};
// Native functions that are bookkeeping, not work: never wrapped (the profiler itself calls them).
const UNWRAPPED = new Set([
  'meta',
  'memory',
  'setErrorClasses',
  'returned',
  'metas',
  'sync',
  'syncSync',
  'ready',
  'dispose',
  'isDisposed',
  'streamInlineTasks',
]);
const ITEM_BYTES: Record<string, number> = { f32: 4, f64: 8, i32: 4, i64: 8, u8: 1, bool: 1, bf16: 2, f16: 2 };

interface HostCall {
  name: string;
  t0: number;
  t1: number;
  shapes?: number[][];
}

type Phase = 'wait' | 'warmup' | 'active' | 'done';

let current: Profiler | null = null;

/** A running or finished profile. Made by {@link start} or {@link profile}. */
export class Profiler {
  readonly activities: ReadonlySet<Activity>;
  readonly recordShapes: boolean;
  readonly profileMemory: boolean;
  readonly rank: number;
  #schedule: Required<ProfileSchedule> | null;
  #step = 0;
  #phase: Phase = 'active';
  #events: TraceEvent[] = [];
  #hostCalls: HostCall[] = [];
  #restore: (() => void) | null = null;
  #lastMemorySample = 0;
  #stopped = false;
  #stepStart = 0;

  /** @internal use fl.profiler.start() or fl.profiler.profile(). */
  constructor(options: ProfileOptions = {}) {
    const op = 'profiler.start';
    const o = checkOptions(op, options, ['activities', 'recordShapes', 'profileMemory', 'schedule', 'rank']);
    const acts = o.activities ?? [...ACTIVITIES];
    if (!Array.isArray(acts)) throw argError(op, `activities must be an array, got ${describe(acts)}`);
    for (const a of acts)
      if (!ACTIVITIES.includes(a)) throw argError(op, `unknown activity ${describe(a)}; expected one of ${ACTIVITIES.join(', ')}`);
    this.activities = new Set(acts);
    this.recordShapes = o.recordShapes === undefined ? false : checkBool(op, 'recordShapes', o.recordShapes);
    this.profileMemory = o.profileMemory === undefined ? false : checkBool(op, 'profileMemory', o.profileMemory);
    this.rank = o.rank === undefined ? Number(process.env.RANK ?? 0) || 0 : checkInt(op, 'rank', o.rank);
    if (o.schedule !== undefined) {
      const s = checkOptions(`${op} schedule`, o.schedule, ['wait', 'warmup', 'active']);
      this.#schedule = {
        wait: s.wait === undefined ? 0 : checkInt(op, 'schedule.wait', s.wait),
        warmup: s.warmup === undefined ? 0 : checkInt(op, 'schedule.warmup', s.warmup),
        active: checkInt(op, 'schedule.active', s.active, 1),
      };
    } else {
      this.#schedule = null;
    }
  }

  /** The number of steps marked so far. */
  get stepNum(): number {
    return this.#step;
  }

  /** @internal */
  begin(): void {
    if (current) throw argError('profiler.start', 'a profiler is already running; stop it first');
    current = this;
    this.#restore = wrapNative(this);
    this.#enter(this.#phaseAt(0));
  }

  /** Marks the end of a training step: advances the schedule and labels the step in the trace. */
  step(): void {
    if (this.#stopped) throw flockError('ERR_ARG', 'profiler.step', 'the profiler has stopped');
    const now = native.profilerNow();
    if (this.#phase === 'active' && this.#stepStart > 0)
      this.#events.push({
        name: `ProfilerStep#${this.#step}`,
        cat: 'step',
        ph: 'X',
        pid: this.rank,
        tid: TID_HOST,
        ts: this.#stepStart,
        dur: now - this.#stepStart,
      });
    this.#step++;
    this.#enter(this.#phaseAt(this.#step));
  }

  /** Ends recording; waits (blocking) for queued work so every recorded kernel has its interval. */
  stop(): void {
    if (this.#stopped) return;
    this.#enter('done');
    this.#restore?.();
    this.#restore = null;
    this.#stopped = true;
    if (current === this) current = null;
  }

  /** Every recorded event, in time order (metadata first). */
  events(): TraceEvent[] {
    const tids = new Set<number>([TID_HOST]);
    for (const e of this.#events) tids.add(e.tid);
    return [...metadataEvents(this.rank, tids), ...[...this.#events].sort((a, b) => a.ts - b.ts)];
  }

  /** The trace as a Chrome trace-event object. */
  chromeTrace(): ChromeTrace {
    return { traceEvents: this.events(), displayTimeUnit: 'ms', otherData: { rank: this.rank, producer: 'flockml' } };
  }

  /** Writes the trace as JSON for Perfetto (ui.perfetto.dev) or chrome://tracing. */
  exportChromeTrace(path: string): void {
    if (typeof path !== 'string' || path === '')
      throw argError('exportChromeTrace', `path must be a non-empty string, got ${describe(path)}`);
    writeTrace(path, this.chromeTrace());
  }

  /** Per-op totals (calls, self and total device time, host time, queue delay); `.table()` prints them. */
  keyAverages(): KeyAverages {
    return keyAverages(this.#events);
  }

  /** @internal a user range's interval. */
  addRange(name: string, ts: number, end: number): void {
    if (this.#phase === 'active') this.#events.push({ name, cat: 'range', ph: 'X', pid: this.rank, tid: TID_HOST, ts, dur: end - ts });
  }

  /** @internal one native call made while recording. */
  onCall(name: string, method: string, args: unknown[], t0: number, t1: number, result: unknown): void {
    if (this.#phase !== 'active' && this.#phase !== 'warmup') return;
    const collective = COLLECTIVES[method];
    if (collective !== undefined) {
      if (this.activities.has('comm') && result instanceof Promise) this.#recordCollective(collective, args, t0, result);
      return;
    }
    const call: HostCall = { name, t0, t1 };
    if (this.recordShapes) call.shapes = shapesOf(args);
    this.#hostCalls.push(call);
    if (this.profileMemory && t1 - this.#lastMemorySample > 1000) this.#sampleMemory(t1);
  }

  #recordCollective(name: string, args: unknown[], t0: number, result: Promise<unknown>): void {
    let bytes = 0;
    for (const a of args) {
      const m = metaOf(a);
      if (m !== null) bytes += m.shape.reduce((p, d) => p * d, 1) * (ITEM_BYTES[m.dtype] ?? 0);
    }
    const phase = this.#phase;
    result.then(
      (stamp) => {
        // The ring backend resolves with the completion time (ms since the epoch) taken on its communication thread.
        const end = stamp instanceof ArrayBuffer && stamp.byteLength >= 8 ? new Float64Array(stamp, 0, 1)[0] * 1000 : native.profilerNow();
        if (phase === 'active' && this.#phase !== 'warmup')
          this.#events.push({
            name,
            cat: 'comm',
            ph: 'X',
            pid: this.rank,
            tid: TID_COMM,
            ts: t0,
            dur: Math.max(0, end - t0),
            args: { bytes },
          });
      },
      () => {},
    );
  }

  #sampleMemory(ts: number): void {
    this.#lastMemorySample = ts;
    for (const [device, s] of Object.entries(native.memory()))
      this.#events.push({
        name: `memory ${device}`,
        ph: 'C',
        pid: this.rank,
        tid: TID_HOST,
        ts,
        args: { bytes: s.bytes, tensors: s.tensors },
      });
  }

  #phaseAt(step: number): Phase {
    const s = this.#schedule;
    if (!s) return 'active';
    if (step < s.wait) return 'wait';
    if (step < s.wait + s.warmup) return 'warmup';
    if (step < s.wait + s.warmup + s.active) return 'active';
    return 'done';
  }

  #enter(next: Phase): void {
    const prev = this.#phase;
    const first = this.#stepStart === 0;
    const recording = (p: Phase) => p === 'warmup' || p === 'active';
    if (!first && prev !== next && recording(prev)) {
      native.profilerStop();
      this.#collect(prev === 'active');
    }
    if ((first || prev !== next) && recording(next)) native.profilerStart();
    this.#phase = next;
    if (next === 'active' && this.profileMemory) this.#sampleMemory(native.profilerNow());
    this.#stepStart = native.profilerNow();
  }

  // Waits for every stream, drains the native records and turns them into events (or drops them).
  #collect(keep: boolean): void {
    syncAll();
    const recs = native.profilerDrain();
    const calls = this.#hostCalls;
    this.#hostCalls = [];
    if (!keep) return;
    if (this.profileMemory) this.#sampleMemory(native.profilerNow());
    const used = new Set<HostCall>();
    let j = 0;
    const order = recs.ops.map((_, i) => i).sort((a, b) => recs.times[3 * a] - recs.times[3 * b]);
    for (const i of order) {
      const op = recs.ops[i];
      if (op === 'sync') continue; // the stream's own completion marker, not a kernel
      const stream = recs.streams[i];
      if (!this.activities.has(stream.startsWith('cpu') ? 'cpu' : 'cuda')) continue;
      const enq = recs.times[3 * i];
      const start = recs.times[3 * i + 1];
      const end = recs.times[3 * i + 2];
      while (j < calls.length && calls[j].t1 < enq) j++;
      const call = j < calls.length && calls[j].t0 <= enq ? calls[j] : undefined;
      const args: Record<string, unknown> = { stream, queueDelayUs: start - enq, nativeOp: op };
      if (call) {
        args.hostUs = used.has(call) ? 0 : call.t1 - call.t0;
        if (call.shapes) args.shapes = call.shapes;
        used.add(call);
      }
      const name = call ? call.name : op;
      this.#events.push({ name, cat: 'kernel', ph: 'X', pid: this.rank, tid: streamTid(stream), ts: start, dur: end - start, args });
    }
    if (this.activities.has('cpu'))
      for (const c of used)
        this.#events.push({
          name: c.name,
          cat: 'op',
          ph: 'X',
          pid: this.rank,
          tid: TID_HOST,
          ts: c.t0,
          dur: c.t1 - c.t0,
          ...(c.shapes ? { args: { shapes: c.shapes } } : {}),
        });
  }
}

function syncAll(): void {
  for (const device of Object.keys(native.memory())) native.syncSync(device);
}

/**
 * The metadata of an argument that is a live tensor handle (a number of a handle's form: see
 * cpp/bindings/tensor_handle.h), else null.
 */
function metaOf(a: unknown): HandleMeta | null {
  if (typeof a !== 'number' || !Number.isInteger(a) || !(a >= 2 ** 48 && a < 2 ** 49) || native.isDisposed(a as NativeTensor)) return null;
  return native.meta(a as NativeTensor);
}

function shapesOf(args: unknown[]): number[][] {
  const out: number[][] = [];
  const visit = (a: unknown) => {
    const m = metaOf(a);
    if (m !== null) out.push(m.shape as number[]);
    else if (Array.isArray(a)) for (const v of a) visit(v);
  };
  for (const a of args) visit(a);
  return out;
}

// An op's name in the trace: the method, or the op it names (binary('add', ...) is "add").
function callName(method: string, args: unknown[]): string {
  let first = args[0];
  if (typeof first === 'number') {
    const names =
      method === 'binary'
        ? binaryOpNames
        : method === 'unary' || method === 'unaryBackward'
          ? unaryOpNames
          : method === 'reduce'
            ? reduceOpNames
            : null;
    if (names !== null && names[first] !== undefined) first = names[first];
  }
  if (typeof first === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(first)) {
    return method === 'binary' || method === 'unary' || method === 'reduce' ? first : `${method}.${first}`;
  }
  return method;
}

// Replaces each function of the addon with a timing twin for as long as the profiler runs.
function wrapNative(p: Profiler): () => void {
  const target = native as unknown as Record<string, unknown>;
  const originals = new Map<string, (...args: unknown[]) => unknown>();
  const now = native.profilerNow;
  for (const key of Object.keys(target)) {
    const fn = target[key];
    if (typeof fn !== 'function' || UNWRAPPED.has(key) || key.startsWith('profiler')) continue;
    const original = fn as (...args: unknown[]) => unknown;
    originals.set(key, original);
    target[key] = function profiled(this: unknown, ...args: unknown[]): unknown {
      const t0 = now();
      const result = original.apply(this, args);
      p.onCall(callName(key, args), key, args, t0, now(), result);
      return result;
    };
  }
  return () => {
    for (const [key, fn] of originals) target[key] = fn;
  };
}

/** The running profiler, if any. */
export function active(): Profiler | null {
  return current;
}

/**
 * Starts profiling now; mark steps with `p.step()` and end with `p.stop()`.
 *
 *   const p = fl.profiler.start({ recordShapes: true, schedule: { wait: 1, warmup: 1, active: 3 } });
 *   for (...) { trainStep(); p.step(); }
 *   p.stop(); p.exportChromeTrace('trace.json');
 */
export function start(options?: ProfileOptions): Profiler {
  const p = new Profiler(options ?? {});
  p.begin();
  return p;
}

/** Profiles `fn` (sync or async) and returns the stopped profiler. */
export async function profile(options: ProfileOptions, fn: (p: Profiler) => unknown): Promise<Profiler> {
  if (typeof fn !== 'function') throw argError('profiler.profile', `expected a function, got ${describe(fn)}`);
  const p = start(options);
  try {
    await fn(p);
  } finally {
    p.stop();
  }
  return p;
}
