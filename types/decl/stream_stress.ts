/** The diagnostics of the CPU runtime for tests (cpp/bindings/stream_stress.cc). */
import { group, hand } from './dsl';

export const streamStressExports = group('stream_stress', 'diagnostics of the CPU runtime for tests', [
  hand(
    'streamGateStress',
    null,
    '(device: string, threads: number, tasks: number): { overlaps: number; overtaken: number; inlineRan: number; queuedRan: number }',
    "Diagnostic for tests: `threads` threads queue `tasks` tasks each on CPU `device`'s stream while this thread queues `tasks` and tries to run one inline after each (blocking until all ran). `overlaps`: tasks that ran while another did; `overtaken`: inline tasks that ran before one this thread queued earlier. Both must be 0.",
  ),
  hand(
    'poolRegionStress',
    null,
    '(regions: number, n: number, busyThreads: number): { missed: number; repeated: number; stale: number; threads: number }',
    'Diagnostic for tests: runs `regions` parallel regions of the intra-op pool on this thread (one in five of `n` items, the rest of 1 to 7) while `busyThreads` threads spin. `missed`/`repeated`: items run no time or more than once; `stale`: items run outside their region. All must be 0.',
  ),
]);
