import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { native } from '../../lib/native';

/**
 * The intra-op pool (cpp/cpu/threadpool.cc): a worker joins a region before it takes any items,
 * and the caller, once out of items, closes the region and waits only for the workers that
 * joined. Regions too short for a sleeping worker to join, with the cores kept busy or not: every
 * item runs exactly once and inside its own region — a worker that joins late must neither run a
 * region that has returned nor be waited for.
 */
const saved = fl.getNumThreads();

for (const [threads, busy] of [
  [2, 0],
  [2, 2],
  [4, 1],
]) {
  test(`${threads} pool threads, ${busy} busy threads: every item once, in its own region`, () => {
    fl.setNumThreads(threads);
    try {
      const r = native.poolRegionStress(20000, 64, busy);
      assert.is(r.threads, threads);
      assert.equal({ missed: r.missed, repeated: r.repeated, stale: r.stale }, { missed: 0, repeated: 0, stale: 0 });
    } finally {
      fl.setNumThreads(saved);
    }
  });
}

test('poolRegionStress checks its arguments', () => {
  assert.throws(
    () => native.poolRegionStress(0, 64, 0),
    (e: Error & { code?: string }) => e.code === 'ERR_INDEX' && /poolRegionStress: regions 0 is out of range/.test(e.message),
  );
});

test.run();
