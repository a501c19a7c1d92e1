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
