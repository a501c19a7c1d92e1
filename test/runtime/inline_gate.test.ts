/**
 * The CPU stream's inline gate under threads: while other threads queue tasks on one stream, the
 * calling thread's inline runs never overlap a queued task and never overtake one it queued earlier
 * (cpp/cpu/stream.h; the native stress is cpp/bindings/stream_stress.cc).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../lib/native';

for (const threads of [0, 1, 3]) {
  test(`inline gate with ${threads} other queueing thread(s): no overlap, no overtaking`, () => {
    const tasks = 4000;
    const r = native.streamGateStress('cpu', threads, tasks);
    assert.is(r.overlaps, 0, 'tasks ran at the same time');
    assert.is(r.overtaken, 0, 'an inline task ran before one queued earlier');
    assert.is(r.queuedRan, (threads + 1) * tasks, 'every queued task ran');
    assert.ok(r.inlineRan > 0, `some inline runs took the gate (${r.inlineRan})`);
  });
}

test('streamGateStress refuses bad arguments', () => {
  const code = (c: string) => (e: Error & { code?: string }) => e.code === c && e.message.includes('streamGateStress');
  assert.throws(() => native.streamGateStress('cpu', 17, 10), code('ERR_INDEX'));
  assert.throws(() => native.streamGateStress('cpu', 1, 0), code('ERR_INDEX'));
  assert.throws(
    () => native.streamGateStress('cuda:0', 1, 10),
    (e: Error & { code?: string }) => typeof e.code === 'string',
  );
});

test.run();
