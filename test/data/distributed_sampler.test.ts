/** DistributedSampler: disjoint rank-strided shares, equal lengths by padding, seeded epochs. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DistributedSampler } from '../../lib/index';
import { throwsCode } from '../fixtures/load';

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

test('bad arguments are coded errors naming DistributedSampler (a plain TypeError or "reading numReplicas" before)', () => {
  for (const junk of [undefined, null, {}, 'ten', Symbol('n')]) throwsCode(() => new DistributedSampler(junk as never), 'ERR_ARG');
  throwsCode(() => new DistributedSampler(-1), 'ERR_RANGE');
  throwsCode(() => new DistributedSampler(NaN), 'ERR_RANGE');
  throwsCode(() => new DistributedSampler({ length: 2.5 }), 'ERR_RANGE');
  throwsCode(() => new DistributedSampler(10, null as never), 'ERR_ARG');
  throwsCode(() => new DistributedSampler(10, { numReplica: 2 } as never), 'ERR_ARG');
  throwsCode(() => new DistributedSampler(10, { numReplicas: 0 }), 'ERR_RANGE');
  throwsCode(() => new DistributedSampler(10, { shuffle: 'yes' } as never), 'ERR_ARG');
  throwsCode(() => new DistributedSampler(10, { seed: 1.5 }), 'ERR_RANGE');
  throwsCode(() => new DistributedSampler(10).setEpoch(Symbol('e') as never), 'ERR_ARG');
  throwsCode(() => new DistributedSampler(10, { numReplicas: 2, rank: 2 }), 'ERR_ARG');
  try {
    new DistributedSampler(undefined as never);
  } catch (e) {
    assert.match((e as Error).message, /^DistributedSampler: dataset must be a length or have a numeric length, got undefined$/);
  }
});

test.run();
