/** Shared helpers of the tensor-parallel workers: comparing tensors and counting checks. */
import type * as fl from '../../../lib/index';
import { close } from '../../helpers/reference';
import { valuesAsync } from '../../helpers/values';

export let checks = 0;

/** Throws naming `what` unless `a` and `b` have the same shape and agree within tol + tol·|b| everywhere (a NaN fails). */
export async function expectClose(what: string, a: fl.Tensor, b: fl.Tensor, tol = 1e-9): Promise<void> {
  if (a.shape.join(',') !== b.shape.join(',')) throw new Error(`${what}: shape [${a.shape}] vs [${b.shape}]`);
  close(await valuesAsync(a), await valuesAsync(b), tol, tol, what, false);
  checks++;
}

/** The error `fn` throws (or its promise rejects with); throws when it succeeds. */
export async function errorOf(fn: () => unknown): Promise<Error & { code?: string }> {
  try {
    await fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected an error');
}

/** Throws unless `fn` fails with `code` and a message containing `text`. */
export async function expectError(what: string, fn: () => unknown, code: string, text: string): Promise<void> {
  const e = await errorOf(fn);
  if (e.code !== code || !e.message.includes(text))
    throw new Error(`${what}: expected ${code} with '${text}', got ${e.code}: ${e.message}`);
  checks++;
}
