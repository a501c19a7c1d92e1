/**
 * The stale-synchronous clock table of one server. A worker's clock is the number of gradients it
 * has pushed. A worker at clock c may read the parameters once c − (the slowest live worker's
 * clock) ≤ staleness; with staleness 0 that is once every live worker has pushed c times (the
 * round-c barrier of synchronous SGD), with Infinity never waiting (fully asynchronous).
 *
 * Reads are held until every worker expected at the start has joined, left or been given up on, so
 * the first rounds are not run by whichever worker happened to start first.
 */
export class ClockTable {
  readonly staleness: number;
  readonly #live = new Map<number, number>();
  readonly #expected: Set<number>;
  #reached = 0;

  constructor(staleness: number, expected: Iterable<number>) {
    this.staleness = staleness;
    this.#expected = new Set(expected);
  }

  /** Whether the expected workers have all joined or been given up on. */
  get started(): boolean {
    return this.#expected.size === 0;
  }

  /** Expected workers that have not joined yet. */
  get missing(): number[] {
    return [...this.#expected].sort((a, b) => a - b);
  }

  /** Live workers and their clocks. */
  get live(): ReadonlyMap<number, number> {
    return this.#live;
  }

  /** The slowest live worker's clock; Infinity with none live. */
  get min(): number {
    let m = Infinity;
    for (const c of this.#live.values()) if (c < m) m = c;
    return m;
  }

  /** The clock a worker joining now starts at: the slowest live worker's, or the highest any reached. */
  get floor(): number {
    return this.#live.size ? this.min : this.#reached;
  }

  /** Adds `rank` at `clock`; false (nothing changed) when `clock` is below {@link floor}. */
  join(rank: number, clock: number): boolean {
    if (clock < this.floor) return false;
    this.#live.set(rank, clock);
    this.#expected.delete(rank);
    this.#reached = Math.max(this.#reached, clock);
    return true;
  }

  /** Counts one push of `rank`; returns its new clock. */
  tick(rank: number): number {
    const c = (this.#live.get(rank) ?? 0) + 1;
    this.#live.set(rank, c);
    this.#reached = Math.max(this.#reached, c);
    return c;
  }

  /** Removes `rank` (left, lost or timed out); an expected rank that never joined is given up on. */
  drop(rank: number): void {
    this.#live.delete(rank);
    this.#expected.delete(rank);
  }

  /** Whether a worker at `clock` may read now. */
  mayRead(clock: number): boolean {
    return this.started && clock - this.min <= this.staleness;
  }

  /** Whether nothing is left to serve: the start is over and no worker is live. */
  get finished(): boolean {
    return this.started && this.#live.size === 0;
  }
}
