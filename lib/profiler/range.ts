/** User ranges: a named interval on the host timeline of the trace, and an NVTX range on CUDA. */
import { argError, describe } from '../errors';
import { native } from '../native';
import { active } from './profile';

/** An open range; closing it (dispose, or `using`) records its interval. */
export interface ProfilerRange {
  readonly name: string;
  end(): void;
  [Symbol.dispose](): void;
}

/**
 * Marks a named range: `using _ = fl.profiler.range('forward')`, or with a callback,
 * `await fl.profiler.range('step', async () => {...})` (returns the callback's result).
 * Emitted even without a running profiler, as NVTX ranges for Nsight Systems.
 */
export function range(name: string): ProfilerRange;
export function range<T>(name: string, fn: () => T): T;
export function range<T>(name: string, fn?: () => T): ProfilerRange | T {
  if (typeof name !== 'string' || name === '') throw argError('profiler.range', `name must be a non-empty string, got ${describe(name)}`);
  if (fn !== undefined && typeof fn !== 'function') throw argError('profiler.range', `expected a function, got ${describe(fn)}`);
  const t0 = native.profilerNow();
  native.profilerRangePush(name);
  let open = true;
  const end = () => {
    if (!open) return;
    open = false;
    native.profilerRangePop();
    active()?.addRange(name, t0, native.profilerNow());
  };
  if (fn === undefined) return { name, end, [Symbol.dispose]: end };
  let result: T;
  try {
    result = fn();
  } catch (e) {
    end();
    throw e;
  }
  if (result instanceof Promise) return result.finally(end) as T;
  end();
  return result;
}
