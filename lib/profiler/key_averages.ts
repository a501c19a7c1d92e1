/** Per-op totals of a profile, like torch.profiler's key_averages(). Times in µs. */
import type { TraceEvent } from './trace';
import { argError, describe, outOfRange } from '../errors';

export interface KeyAverageRow {
  /** The op (a kernel's name on its stream, a user range, or a collective). */
  key: string;
  calls: number;
  /** Device time spent in this op's own kernels. */
  selfDeviceUs: number;
  /** Device time of every kernel inside it: its own for a kernel, those it encloses for a user range. */
  totalDeviceUs: number;
  /** Host time of the JS calls that queued it (or of the range itself). */
  hostUs: number;
  /** Mean time from queueing a kernel to its start. */
  avgQueueDelayUs: number;
  avgDeviceUs: number;
}

/** Rows sorted by total device time, largest first; `.table()` formats them. */
export class KeyAverages extends Array<KeyAverageRow> {
  /** Rows, or a length (as Array's own methods, slice and map, make their results). */
  constructor(...rows: KeyAverageRow[] | [number]) {
    const [n] = rows;
    if (rows.length === 1 && typeof n === 'number') {
      if (!Number.isInteger(n) || n < 0 || n > 2 ** 32 - 1)
        throw outOfRange('KeyAverages', `length must be an integer in [0, 2^32 - 1], got ${n}`);
      super(n);
    } else super(...(rows as KeyAverageRow[]));
  }

  /** A fixed-width text table; `rowLimit` rows at most (all by default). */
  table(rowLimit = Number.POSITIVE_INFINITY): string {
    const rows = this.slice(0, rowLimit);
    const totalDevice = this.reduce((s, r) => s + r.selfDeviceUs, 0);
    const fmt = (us: number) => (us >= 1000 ? `${(us / 1000).toFixed(3)}ms` : `${us.toFixed(3)}us`);
    const header = ['Name', 'Self device %', 'Self device', 'Total device', 'Device avg', 'Host total', 'Queue delay avg', '# Calls'];
    const body = rows.map((r) => [
      r.key,
      totalDevice > 0 ? `${((100 * r.selfDeviceUs) / totalDevice).toFixed(2)}%` : '-',
      fmt(r.selfDeviceUs),
      fmt(r.totalDeviceUs),
      fmt(r.avgDeviceUs),
      fmt(r.hostUs),
      fmt(r.avgQueueDelayUs),
      String(r.calls),
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
    const line = widths.map((w) => '-'.repeat(w)).join('  ');
    const fmtRow = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
    return [line, fmtRow(header), line, ...body.map(fmtRow), line, `Self device time total: ${fmt(totalDevice)}`].join('\n');
  }
}

/** Groups the trace's events by name: kernels (cat 'kernel'), collectives ('comm') and user ranges ('range'). */
export function keyAverages(events: readonly TraceEvent[]): KeyAverages {
  if (!Array.isArray(events)) throw argError('keyAverages', `events must be a trace's traceEvents array, got ${describe(events)}`);
  const odd = events.findIndex((e) => e === null || typeof e !== 'object');
  if (odd >= 0) throw argError('keyAverages', `events[${odd}] must be a trace event, got ${describe(events[odd])}`);
  const rows = new Map<string, KeyAverageRow & { queueTotal: number }>();
  const row = (key: string) => {
    let r = rows.get(key);
    if (!r) {
      r = { key, calls: 0, selfDeviceUs: 0, totalDeviceUs: 0, hostUs: 0, avgQueueDelayUs: 0, avgDeviceUs: 0, queueTotal: 0 };
      rows.set(key, r);
    }
    return r;
  };
  const kernels = events.filter((e) => e.ph === 'X' && e.cat === 'kernel');
  for (const k of kernels) {
    const r = row(k.name);
    r.calls++;
    r.selfDeviceUs += k.dur ?? 0;
    r.totalDeviceUs += k.dur ?? 0;
    r.queueTotal += Number(k.args?.queueDelayUs ?? 0);
    r.hostUs += Number(k.args?.hostUs ?? 0);
  }
  for (const e of events) {
    if (e.ph !== 'X' || (e.cat !== 'range' && e.cat !== 'comm')) continue;
    const r = row(e.name);
    r.calls++;
    r.hostUs += e.dur ?? 0;
    if (e.cat === 'comm') {
      r.selfDeviceUs += e.dur ?? 0;
      r.totalDeviceUs += e.dur ?? 0;
    } else {
      const end = e.ts + (e.dur ?? 0);
      for (const k of kernels) if (k.ts >= e.ts && k.ts + (k.dur ?? 0) <= end) r.totalDeviceUs += k.dur ?? 0;
    }
  }
  const out = new KeyAverages();
  for (const { queueTotal, ...r } of rows.values()) {
    r.avgDeviceUs = r.calls > 0 ? r.totalDeviceUs / r.calls : 0;
    r.avgQueueDelayUs = r.calls > 0 ? queueTotal / r.calls : 0;
    out.push(r);
  }
  out.sort((a, b) => b.totalDeviceUs - a.totalDeviceUs);
  return out;
}
