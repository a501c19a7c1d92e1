/**
 * How fault workers end: print the failure (code, message, time to fail) as JSON, then whether
 * later work on the broken group fails too (it must, at once, with the same cause), and exit 3.
 */
import type { ProcessGroup } from '../../../lib/distributed/process_group';

export async function reportFailure(pg: ProcessGroup, e: unknown, started: number): Promise<never> {
  const err = e as Error & { code?: string };
  console.log(JSON.stringify({ failed: true, code: err.code, message: err.message, ms: Date.now() - started }));
  const again = await pg
    .barrier()
    .wait()
    .then(
      () => 'ok',
      (e2: Error & { code?: string }) => e2.code,
    );
  console.log(JSON.stringify({ again }));
  process.exit(3);
}
