/** The back-pressure: fl.ready() (cpp/bindings/ready.cc). */
import { group, hand } from './dsl';

export const readyExports = group('ready', 'back-pressure: fl.ready()', [
  hand(
    'ready',
    null,
    '(device: string | null, lowWatermark: number): Promise<void>',
    "Resolves once `device`'s stream (null: every stream created so far) lets the host queue more: a CPU queue at or below `lowWatermark` tasks; a CUDA stream once the work before the previous ready call has finished. Resolved at once when already so; rejects with a failed stream's error.",
  ),
  hand(
    'streamInlineTasks',
    null,
    '(device: string): number',
    "How many small kernels `device`'s stream has run on this thread because its worker was idle with nothing queued.",
  ),
]);
