/**
 * Random draws inside a tensor-parallel region. Ranks of a group are seeded alike (so their
 * replicated weights and inputs agree), but dropout on their different slices (attention heads)
 * must not repeat one mask pattern across ranks: as Megatron-LM's model-parallel RNG tracker, such
 * draws come from a generator of the region's own, seeded from the global seed and the rank,
 * which leaves the global generator where it was, so the ranks stay in step.
 */
import type { ProcessGroup } from '../../distributed/process_group';
import { getRngState, setRngState } from '../../random';

// Megatron-LM's offset of the tensor-parallel seed; any constant apart from the data-parallel seed works.
const OFFSET = 2718;

export class ParallelRng {
  #state: { seed: number; offset: number } | null = null;

  constructor(private readonly group: ProcessGroup) {}

  /** Runs `fn` (synchronous) with this region's generator as the global one. */
  run<T>(fn: () => T): T {
    const outer = getRngState();
    this.#state ??= { seed: (outer.seed + OFFSET + this.group.rank) % 2 ** 32, offset: 0 };
    setRngState(this.#state);
    try {
      return fn();
    } finally {
      this.#state = getRngState();
      setRngState(outer);
    }
  }
}
