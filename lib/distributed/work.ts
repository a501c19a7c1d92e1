/** Work: the handle of one queued collective. `await work.wait()` before reading its outputs. */
export class Work {
  readonly op: string;
  #done = false;
  #promise: Promise<void>;

  /** @internal */
  constructor(op: string, promise: Promise<void>) {
    this.op = op;
    this.#promise = promise.then(() => {
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
