/** Tensor lifetimes: tidy scopes, keep, memory statistics, and (FLOCKML_TRACE_ALLOC=1) creation sites. */
import { native, type NativeTensor } from './native';
import { normalizeDevice } from './device';
import type { DeviceMemoryStats } from '../types/native';
import { argError, describe } from './errors';
import { allocationTracing, traceAllocation, untraceAllocation, type Traceable } from './memory_trace';

interface Disposable {
  dispose(): void;
  readonly isDisposed: boolean;
  /** Called when no tidy scope holds it any more (a Tensor then lets the garbage collector free it). */
  _unscoped?(): void;
  /** Marks it disposed and returns the native handle left to dispose (see Tensor._release). */
  _release?(): NativeTensor | null;
  /** The tidy scope that will dispose it, if any: a scope holds only what names it here. */
  _scope?: unknown[] | null;
}

/** A tidy scope: what was created in it, in order; members whose `_scope` names another scope (or none) left it. */
type Scope = Disposable[];

/** Disposes every one of `items` for which `keepIf` is false (or all), their handles in one native call. */
function disposeAll(items: Iterable<Disposable>, keepIf?: (t: Disposable) => boolean): void {
  const handles: NativeTensor[] = [];
  try {
    for (const t of items) {
      if (keepIf?.(t)) continue;
      if (t._release === undefined) t.dispose();
      else {
        const h = t._release();
        if (h !== null) handles.push(h);
      }
    }
  } finally {
    if (handles.length > 0) native.dispose(handles);
  }
}

const scopes: Scope[] = [];

/** Registers a new tensor with the innermost tidy scope, if any, and with the allocation trace when on. */
export function track(t: Disposable & Traceable): void {
  addToScope(t);
  if (allocationTracing) traceAllocation(t);
}

function addToScope(t: Disposable): void {
  if (scopes.length > 0) {
    const scope = scopes[scopes.length - 1];
    scope.push(t);
    t._scope = scope;
  } else {
    t._scope = null;
    t._unscoped?.();
  }
}

/** @internal The innermost tidy scope open now (what a tensor made now has as `_scope`), or null. */
export function currentScope(): unknown[] | null {
  return scopes.length > 0 ? scopes[scopes.length - 1] : null;
}

/** Tells the allocation trace that `t` was disposed (not left to the garbage collector). */
export function untrack(t: Traceable): void {
  if (allocationTracing) untraceAllocation(t);
}

/** Removes `t` from every tidy scope so that no scope disposes it. Returns `t`. */
export function keep<T extends Disposable>(t: T): T {
  if (t === null || typeof t !== 'object' || !('dispose' in t && 'isDisposed' in t))
    throw argError('keep', `expected a tensor, got ${describe(t)}`);
  t._scope = null;
  t._unscoped?.();
  return t;
}

/**
 * @internal Hands `t` (kept earlier) to the innermost tidy scope open now, which disposes it when
 * it ends; with no scope open, the garbage collector keeps freeing it.
 */
export function adopt(t: Disposable): void {
  if (scopes.length > 0 && !t.isDisposed) addToScope(t);
}

function collect(value: unknown, out: Set<unknown>, depth = 0): void {
  if (value === null || typeof value !== 'object' || depth > 8) return;
  if ('dispose' in value && 'isDisposed' in value) {
    out.add(value);
    return;
  }
  if (Array.isArray(value)) for (const v of value) collect(v, out, depth + 1);
  else if (value instanceof Map) for (const v of value.values()) collect(v, out, depth + 1);
  else for (const v of Object.values(value)) collect(v, out, depth + 1);
}

/**
 * Runs `fn` and disposes every tensor created inside it except those it returns (directly, or in
 * arrays, maps and plain objects) and those passed to {@link keep}. Returned tensors move to the
 * enclosing scope. Async functions are not supported: await outside, tidy inside.
 */
export function tidy<T>(fn: () => T): T {
  if (typeof fn !== 'function') throw argError('tidy', `expected a function, got ${describe(fn)}`);
  const scope: Scope = [];
  scopes.push(scope);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    scopes.pop();
    disposeAll(scope, (t) => t._scope !== scope);
    throw e;
  }
  scopes.pop();
  if (result instanceof Promise) throw argError('tidy', 'the function must not be async: await outside, tidy inside');
  const survivors = new Set<unknown>();
  collect(result, survivors);
  disposeAll(scope, (t) => {
    if (t._scope !== scope) return true; // kept
    if (!survivors.has(t)) return false;
    addToScope(t);
    return true;
  });
  return result;
}

export type { DeviceMemoryStats };

/**
 * Gives memory kept for reuse back to the system (the CPU allocator keeps released blocks, at most
 * FLOCKML_CPU_CACHE_MB, default 1024, over all CPU devices together; each
 * virtual CPU device keeps and gives back its own). Returns the bytes released.
 */
export function emptyCache(device: string = 'cpu'): number {
  return native.emptyCache(normalizeDevice(device, 'emptyCache'));
}

/**
 * Restarts `device`'s peak (`memory()[device].peakBytes`) from the bytes in use now, as
 * torch.cuda.reset_peak_memory_stats, to measure the peak of one phase of a program. Work still
 * queued counts toward the new peak when it runs: `await fl.sync()` first to measure from a
 * drained queue.
 */
export function resetPeakMemory(device: string = 'cpu'): void {
  native.resetPeakMemory(normalizeDevice(device, 'resetPeakMemory'));
}

/**
 * Live tensors, bytes and peak bytes per device, e.g. `{ cpu: { tensors, bytes, peakBytes, storages } }`:
 * 'cpu' (cpu:0), then 'cpu:1' ... for further virtual CPU devices, then 'cuda:N' per visible GPU.
 */
export function memory(): Record<string, DeviceMemoryStats> {
  return native.memory();
}

export { memorySnapshot, memoryLeaks, type AllocationSite } from './memory_trace';
