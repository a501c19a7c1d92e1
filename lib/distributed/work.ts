import { native } from '../native';
import { distError } from './errors';

/** Work: the handle of one queued collective. `await work.wait()` before reading its outputs. */
export class Work {
  readonly op: string;
  #done = false;
  #promise: Promise<void>;
  /**
   * When the collective finished on this rank (ms since the Unix epoch, taken on the thread that
   * saw it finish, not when the JS callback ran); null until then.
   */
  completedAt: number | null = null;

  /** @internal `promise` resolves with the completion time as one float64. */
  // biome-ignore lint/suspicious/noConfusingVoidType: native completions resolve with a timestamp or nothing
  constructor(op: string, promise: Promise<ArrayBuffer | void>) {
    if (typeof op !== 'string' || !(promise instanceof Promise))
      throw distError('ERR_ARG', 'Work: a Work is returned by the collectives (allReduce, broadcast, ...), not made with new');
    this.op = op;
    this.#promise = promise.then((stamp) => {
      if (stamp instanceof ArrayBuffer && stamp.byteLength >= 8) this.completedAt = new Float64Array(stamp, 0, 1)[0];
      this.#done = true;
    });
    // A Work nobody waits on must not crash the process with an unhandled rejection; the error
    // still reaches whoever calls wait().
    this.#promise.catch(() => {
      this.#done = true;
    });
  }

  /** Resolves when the collective has finished on this rank; rejects with its error (ERR_PEER_LOST, ERR_TIMEOUT, ...). */
  wait(): Promise<void> {
    return this.#promise;
  }

  isCompleted(): boolean {
    return this.#done;
  }
}

/**
 * Waits for every Work. When one fails (fail-stop: a rank's step failed, so every rank's
 * collectives of that step fail), it still waits for all the others, so nothing of the failed step
 * is left in flight, then tells the streams the step failed (their failures are reported by this
 * error) and throws the first error. Strategies report a failed step through it.
 */
export async function waitAll(works: Iterable<Work | Promise<unknown>>): Promise<void> {
  const settled = await Promise.allSettled(Array.from(works, (w) => (w instanceof Work ? w.wait() : w)));
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (!failed) return;
  native.acknowledgeFailures();
  throw failed.reason;
}
