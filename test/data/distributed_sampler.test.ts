/** DistributedSampler: disjoint rank-strided shares, equal lengths by padding, seeded epochs. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DistributedSampler } from '../../lib/index';

test('without shuffle, ranks take strided indices and are padded to equal length', () => {
  const shares = [0, 1, 2].map((rank) => new DistributedSampler(10, { numReplicas: 3, rank, shuffle: false }).indices());
  assert.equal(shares[0], [0, 3, 6, 9]);
  assert.equal(shares[1], [1, 4, 7, 0]);
  assert.equal(shares[2], [2, 5, 8, 1]);
});

test('dropLast trims instead of padding', () => {
  const s = new DistributedSampler({ length: 10 }, { numReplicas: 3, rank: 2, shuffle: false, dropLast: true });
  assert.is(s.length, 3);
  assert.equal([...s], [2, 5, 8]);
});

test('shuffle is a permutation shared by all ranks, changing with the epoch', () => {
  const make = (rank: number, epoch: number) => {
    const s = new DistributedSampler(100, { numReplicas: 4, rank, seed: 7 });
    s.setEpoch(epoch);
    return s.indices();
  };
  const all = [0, 1, 2, 3].flatMap((r) => make(r, 0));
  assert.equal(
    [...all].sort((a, b) => a - b),
    Array.from({ length: 100 }, (_, i) => i),
  );
  assert.equal(make(1, 0), make(1, 0));
  assert.not.equal(make(1, 0), make(1, 1));
});

test('invalid ranks are refused', () => {
  assert.throws(() => new DistributedSampler(10, { numReplicas: 2, rank: 2 }), /outside/);
});

test.run();
