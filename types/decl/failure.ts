/** The fail-stop: step tickets and failure states (cpp/bindings/failure.cc). */
import { group, hand } from './dsl';

export const failureExports = group('failure', 'fail-stop: step tickets and failure states', [
  hand(
    'streamTicket',
    null,
    '(device: string): NativeTicket',
    "A ticket queued on `device`'s stream behind everything queued so far: 'ran' once it ran, 'dropped' when a failed stream dropped it (so was everything queued with it), 'queued' before.",
  ),
  hand('ticketState', null, "(t: NativeTicket): 'queued' | 'ran' | 'dropped'"),
  hand(
    'tensorFailure',
    null,
    '(t: NativeTensor): { code: string; message: string; known: boolean } | null',
    'The error of the op whose failure left `t` never computed, or null; `known` once the JS thread has been told (a rejected sync point): ops reading `t` then throw it.',
  ),
  hand(
    'failAllocAfter',
    null,
    '(n: number): void',
    'Test hook: the (n+1)-th storage allocation from now fails with ERR_OOM; -1 turns it off.',
  ),
  hand(
    'acknowledgeFailures',
    null,
    '(): void',
    "Every stream's failures so far are known to the user (a strategy reporting a failed step).",
  ),
]);
