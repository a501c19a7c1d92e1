/** Chrome trace-event JSON: the format Perfetto and chrome://tracing open. Times are µs since the Unix epoch. */
import { readFileSync, writeFileSync } from 'node:fs';
import { argError, describe, flockError } from '../errors';

/** One trace event: "X" complete, "C" counter, "M" metadata, "i" instant. */
export interface TraceEvent {
  name: string;
  ph: 'X' | 'C' | 'M' | 'i';
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  cat?: string;
  s?: 'g' | 'p' | 't';
  args?: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit: 'ms' | 'ns';
  otherData?: Record<string, unknown>;
}

/**
 * Thread ids within one rank's process: fixed for the host and the CPU stream (cpu:0), then per
 * CUDA device, then per further virtual CPU device (cpu:1 ...).
 */
export const TID_HOST = 0;
export const TID_COMM = 1;
const TID_CPU_STREAM = 2;
const TID_CUDA_BASE = 10;
const TID_CPU_DEVICE_BASE = 100;

export function streamTid(stream: string): number {
  if (stream === 'cpu') return TID_CPU_STREAM;
  const m = /^cuda:(\d+)$/.exec(stream);
  if (m) return TID_CUDA_BASE + Number(m[1]);
  const c = /^cpu:(\d+)$/.exec(stream);
  return c && Number(c[1]) > 0 ? TID_CPU_DEVICE_BASE + Number(c[1]) : TID_CPU_STREAM;
}

function threadName(tid: number): string {
  if (tid === TID_HOST) return 'host (JS thread)';
  if (tid === TID_COMM) return 'communication';
  if (tid === TID_CPU_STREAM) return 'stream cpu';
  if (tid > TID_CPU_DEVICE_BASE) return `stream cpu:${tid - TID_CPU_DEVICE_BASE}`;
  return `stream cuda:${tid - TID_CUDA_BASE}`;
}

/** Process and thread name records so the viewer labels each rank and stream. */
export function metadataEvents(pid: number, tids: Iterable<number>): TraceEvent[] {
  const out: TraceEvent[] = [
    { name: 'process_name', ph: 'M', pid, tid: 0, ts: 0, args: { name: `rank ${pid}` } },
    { name: 'process_sort_index', ph: 'M', pid, tid: 0, ts: 0, args: { sort_index: pid } },
  ];
  for (const tid of tids) {
    out.push({ name: 'thread_name', ph: 'M', pid, tid, ts: 0, args: { name: threadName(tid) } });
    out.push({ name: 'thread_sort_index', ph: 'M', pid, tid, ts: 0, args: { sort_index: tid } });
  }
  return out;
}

/** Reads a trace written by exportChromeTrace (or any JSON with a traceEvents array, or a bare event array). */
export function readTrace(path: string): ChromeTrace {
  // Not validate's checkPath: `flockml trace merge` runs without loading the addon, which validate imports.
  if (typeof path !== 'string' || path === '') throw argError('readTrace', `path must be a non-empty string, got ${describe(path)}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw flockError('ERR_IO', 'trace merge', `cannot read ${path}: ${(e as Error).message}`);
  }
  if (Array.isArray(parsed)) return { traceEvents: parsed as TraceEvent[], displayTimeUnit: 'ms' };
  if (parsed === null || typeof parsed !== 'object' || !Array.isArray((parsed as ChromeTrace).traceEvents))
    throw flockError('ERR_FORMAT', 'trace merge', `${path} is not a Chrome trace (no traceEvents array)`);
  return parsed as ChromeTrace;
}

/**
 * Merges per-rank traces into one: each input keeps its pid (its rank); an input whose pid is
 * already taken by an earlier one is moved to the next free pid, so two files from one rank stay
 * apart. Times are already on one clock (µs since the epoch), so nothing is shifted.
 */
export function mergeTraces(traces: ChromeTrace[]): ChromeTrace {
  if (!Array.isArray(traces)) throw argError('mergeTraces', `traces must be an array of traces, got ${describe(traces)}`);
  traces.forEach((t, i) => {
    if (t === null || typeof t !== 'object' || !Array.isArray(t.traceEvents))
      throw argError('mergeTraces', `traces[${i}] must be a trace with a traceEvents array, got ${describe(t)}`);
    // An integer pid each: the pids are what the merge moves apart.
    const odd = t.traceEvents.findIndex((e) => e === null || typeof e !== 'object' || !Number.isInteger(e.pid));
    if (odd >= 0)
      throw argError(
        'mergeTraces',
        `traces[${i}].traceEvents[${odd}] must be an event with an integer pid, got ${describe(t.traceEvents[odd])}`,
      );
  });
  const used = new Set<number>();
  const events: TraceEvent[] = [];
  const ranks: unknown[] = [];
  for (const t of traces) {
    const pids = [...new Set(t.traceEvents.map((e) => e.pid))];
    const remap = new Map<number, number>();
    for (const pid of pids) {
      let to = pid;
      while (used.has(to)) to++;
      remap.set(pid, to);
    }
    for (const to of remap.values()) used.add(to);
    for (const e of t.traceEvents) {
      const pid = remap.get(e.pid) ?? e.pid;
      const renamed = e.ph === 'M' && e.name === 'process_name' && pid !== e.pid ? { ...e.args, name: `rank ${pid}` } : e.args;
      events.push({ ...e, pid, ...(renamed ? { args: renamed } : {}) });
    }
    if (t.otherData) ranks.push(t.otherData);
  }
  return { traceEvents: events, displayTimeUnit: 'ms', otherData: { merged: ranks } };
}

export function writeTrace(path: string, trace: ChromeTrace): void {
  try {
    writeFileSync(path, JSON.stringify(trace));
  } catch (e) {
    throw flockError('ERR_IO', 'exportChromeTrace', `cannot write ${path}: ${(e as Error).message}`);
  }
}
