/** multinomial checks its weights on the CPU stream: it never waits for queued work. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';

/** Slow work queued on cpu:0 and an event after it. */
function slowWork(): { out: fl.Tensor; done: fl.Event } {
  const big = fl.randn([768, 768]);
  let h = big;
  for (let i = 0; i < 8; i++) h = h.matmul(big).mul(1e-3);
  return { out: h, done: fl.Event.record('cpu') };
}

test('multinomial returns before the queued work has run', async () => {
  const { out, done } = slowWork();
  const s = fl.multinomial(fl.tensor([0.2, 0.8]), 5, true);
  assert.not.ok(done.query(), 'multinomial waited for the queue');
  const v = (await s.toArray()) as number[];
  assert.ok(v.every((k) => k === 0 || k === 1));
  out.dispose();
});

test('bad weights reject the next sync point with the op name, and later work runs', async () => {
  const { out, done } = slowWork();
  const s = fl.multinomial(
    fl.tensor([
      [1, 2, 3],
      [1, -2, 3],
    ]),
    2,
  );
  assert.not.ok(done.query());
  const err = (await s.data().then(
    () => undefined,
    (e: unknown) => e,
  )) as (Error & { code?: string }) | undefined;
  assert.ok(err instanceof RangeError);
  assert.is((err as { code?: string }).code, 'ERR_RANGE');
  assert.match(err.message, /^multinomial: probabilities must be non-negative, got -2 in row 1$/);
  assert.equal(await fl.multinomial(fl.tensor([0, 1]), 1).toArray(), [1]);
  out.dispose();
});

test.run();
