/** Whether ops record the graph: off inside {@link noGrad} and while backward runs. */
import { argError } from '../errors';

let enabled = true;

export function isGradEnabled(): boolean {
  return enabled;
}

function isAsyncFunction(fn: () => unknown): boolean {
  return Object.prototype.toString.call(fn) === '[object AsyncFunction]';
}

/**
 * Grad mode is one flag read by every op, set for the duration of a synchronous call. An async
 * function would run only its first synchronous part in that mode and the rest in whatever mode
 * holds when it resumes, so async callbacks are refused instead of being half covered (carrying
 * the mode across awaits would need AsyncLocalStorage, a lookup on every op).
 */
function withGradMode<T>(name: string, flag: boolean, fn: () => T): T {
  if (typeof fn !== 'function') throw argError(name, `expected a function, got ${typeof fn}`);
  const advice = `grad mode does not follow awaits; inside async code, wrap each synchronous block instead: ${name}(() => ...) inside the async function`;
  if (isAsyncFunction(fn)) throw argError(name, `the function is async; ${advice}`);
  const prev = enabled;
  enabled = flag;
  let result: T;
  try {
    result = fn();
  } finally {
    enabled = prev;
  }
  if (typeof (result as { then?: unknown } | null)?.then === 'function') {
    // The promise still settles; it is handled here so that its outcome cannot also surface as an
    // unhandled rejection on top of this error.
    (result as PromiseLike<unknown>).then(undefined, () => undefined);
    throw argError(name, `the function returned a promise; ${advice}`);
  }
  return result;
}

/** Runs `fn` without recording operations for autograd (like `torch.no_grad()`); `fn` must be synchronous. */
export function noGrad<T>(fn: () => T): T {
  return withGradMode('noGrad', false, fn);
}

/** Runs `fn` with recording on, even inside noGrad (like `torch.enable_grad()`); `fn` must be synchronous. */
export function enableGrad<T>(fn: () => T): T {
  return withGradMode('enableGrad', true, fn);
}
