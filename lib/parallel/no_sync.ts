/**
 * Runs `fn` with gradient synchronisation turned off through `setSyncing(false)`, and turns it back
 * on when `fn` returns, throws, or (when it returns a promise) that promise settles. Shared by the
 * noSync() of DataParallel and DistributedDataParallel.
 */
export function runWithoutSync<T>(setSyncing: (on: boolean) => void, fn: () => T): T {
  setSyncing(false);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    setSyncing(true);
    throw e;
  }
  if (result instanceof Promise) return result.finally(() => setSyncing(true)) as T;
  setSyncing(true);
  return result;
}
