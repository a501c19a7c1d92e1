/** The error a call or a promise ends with, for tests that assert on codes and messages. */

/** The error `fn` throws; throws when it returns. */
export function caught(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

/** The error a promise rejects with; throws if it resolves. */
export async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}
