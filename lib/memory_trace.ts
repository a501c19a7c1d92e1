/**
 * Allocation tracing (FLOCKML_TRACE_ALLOC=1, read once at load): every tensor remembers the first
 * JS stack frame outside flockml's lib/ that created it, so live memory can be grouped by creation
 * site and tensors that only the garbage collector freed (never disposed nor tidied) can be found.
 * Off, the cost is one boolean check per tensor: no stack is captured and no finalizer registered.
 */
import { relative, sep } from 'node:path';
import { type CanonicalDType, itemSize } from './dtype';

/** What the trace needs of a tensor. */
export interface Traceable {
  readonly shape: readonly number[];
  readonly dtype: CanonicalDType;
  readonly device: string;
}

/** Tensors created at one site on one device. */
export interface AllocationSite {
  /** `file:line` of the first stack frame outside flockml's lib/ (relative to the working directory). */
  site: string;
  device: string;
  tensors: number;
  /** Logical bytes (elements × item size); views count the bytes they show, not their storage. */
  bytes: number;
}

interface Allocation {
  site: string;
  device: string;
  bytes: number;
  ref: WeakRef<Traceable>;
}

export const allocationTracing = process.env.FLOCKML_TRACE_ALLOC === '1';

const libDir = __dirname + sep;
const live = new Set<Allocation>();
const byTensor = new WeakMap<Traceable, Allocation>();
const leaked = new Map<string, AllocationSite>();
const registry = allocationTracing
  ? new FinalizationRegistry<Allocation>((a) => {
      live.delete(a);
      const key = `${a.site}\u0000${a.device}`;
      const s = leaked.get(key) ?? { site: a.site, device: a.device, tensors: 0, bytes: 0 };
      s.tensors += 1;
      s.bytes += a.bytes;
      leaked.set(key, s);
    })
  : null;

const FRAME = /\(?((?:file:\/\/)?[^\s()]+):(\d+):\d+\)?$/;

/** The first frame of the current stack outside flockml's lib/ and Node's internals, as `file:line`. */
function creationSite(): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 64; // a module's forward can be many frames deep inside lib/
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  for (const line of stack.split('\n').slice(1)) {
    const m = FRAME.exec(line.trim());
    if (!m) continue;
    const file = m[1].startsWith('file://') ? new URL(m[1]).pathname : m[1];
    if (file.startsWith(libDir) || file.startsWith('node:')) continue;
    const rel = relative(process.cwd(), file);
    return `${rel.startsWith('..') ? file : rel}:${m[2]}`;
  }
  return '(unknown)';
}

function bytesOf(t: Traceable): number {
  return t.shape.reduce((a, b) => a * b, 1) * itemSize(t.dtype);
}

/** @internal called for every new tensor while tracing. */
export function traceAllocation(t: Traceable): void {
  const a: Allocation = { site: creationSite(), device: t.device, bytes: bytesOf(t), ref: new WeakRef(t) };
  live.add(a);
  byTensor.set(t, a);
  registry?.register(t, a, t);
}

/** @internal called when a tensor is disposed while tracing. */
export function untraceAllocation(t: Traceable): void {
  const a = byTensor.get(t);
  if (!a) return;
  live.delete(a);
  byTensor.delete(t);
  registry?.unregister(t);
}

function sorted(sites: Iterable<AllocationSite>): AllocationSite[] {
  return [...sites].sort((a, b) => b.bytes - a.bytes || b.tensors - a.tensors || a.site.localeCompare(b.site));
}

/**
 * Live tensors grouped by creation site and device, largest first. Needs FLOCKML_TRACE_ALLOC=1
 * in the environment at load; without it the list is empty (`fl.memory()` has the totals).
 */
export function memorySnapshot(): AllocationSite[] {
  const groups = new Map<string, AllocationSite>();
  for (const a of live) {
    const t = a.ref.deref();
    if (!t) continue; // collected, its finalizer not yet run
    const key = `${a.site}\u0000${t.device}`;
    const s = groups.get(key) ?? { site: a.site, device: t.device, tensors: 0, bytes: 0 };
    s.tensors += 1;
    s.bytes += bytesOf(t);
    groups.set(key, s);
  }
  return sorted(groups.values());
}

/**
 * Tensors freed by the garbage collector's finalizer (never disposed nor tidied) so far, by
 * creation site and device, largest first. Needs FLOCKML_TRACE_ALLOC=1; a tensor shows here only
 * once the collector has run and its finalizer with it.
 */
export function memoryLeaks(): AllocationSite[] {
  return sorted([...leaked.values()].map((s) => ({ ...s })));
}

function formatBytes(n: number): string {
  return n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;
}

/** The exit report: finalizer-freed tensors by site, at most `max` lines. */
function formatLeaks(sites: AllocationSite[], max = 10): string {
  const total = sites.reduce((n, s) => n + s.tensors, 0);
  const lines = [`flockml: ${total} tensor${total === 1 ? '' : 's'} freed by the garbage collector, never disposed:`];
  for (const s of sites.slice(0, max)) lines.push(`  ${s.site}  ${s.device}  ${s.tensors} tensors, ${formatBytes(s.bytes)}`);
  if (sites.length > max) lines.push(`  ... and ${sites.length - max} more sites (fl.memoryLeaks())`);
  return lines.join('\n');
}

if (allocationTracing)
  process.on('exit', () => {
    if (leaked.size > 0) process.stderr.write(`${formatLeaks(memoryLeaks())}\n`);
  });
