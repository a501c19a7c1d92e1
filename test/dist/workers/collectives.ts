/**
 * Every collective, dtype and size against a reference each rank computes itself: rank r's input
 * element i is a small integer f(r, i), so sums are exact even in bf16/f16.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup, newGroup, allReduce } from '../../../lib/distributed/index';
import type { DType } from '../../../lib/dtype';
import { close } from '../../helpers/reference';
import { valuesAsync } from '../../helpers/values';

const dtypes: DType[] = ['f32', 'f64', 'i32', 'i64', 'bf16', 'f16'];
const sizes = (process.env.SIZES ?? '0,1,7,1048579').split(',').map(Number);
const value = (r: number, i: number) => ((r * 7 + i * 3) % 11) - 5 + r; // small, distinct per rank, negative too

function make(n: number, dtype: DType, f: (i: number) => number): fl.Tensor {
  const a = new Float64Array(n);
  for (let i = 0; i < n; i++) a[i] = f(i);
  return fl.tensor(a, { dtype: 'f64' }).to(dtype);
}

/** `got` against `want(i)` for each i: integers, so to 1e-9 relative and zeros exactly. */
function check(what: string, got: number[], want: (i: number) => number): void {
  close(
    got,
    got.map((_, i) => want(i)),
    1e-9,
    0,
    what,
  );
}

async function main() {
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: 30_000 });
  const n = pg.size,
    r = pg.rank;
  // Reductions over ranks without allocating: the checks run over a million elements.
  const fold = (i: number, f: (a: number, b: number) => number) => {
    let acc = value(0, i);
    for (let k = 1; k < n; k++) acc = f(acc, value(k, i));
    return acc;
  };
  const sum = (i: number) => fold(i, (a, b) => a + b);
  for (const dtype of dtypes) {
    for (const size of sizes) {
      const tag = `${dtype}[${size}]`;
      const ops = [
        ['sum', sum],
        ['max', (i: number) => fold(i, Math.max)],
        ['min', (i: number) => fold(i, Math.min)],
      ] as const;
      // Large tensors: every dtype through sum; the other ops in f32 only, to keep the test short.
      const big = size > 65536;
      for (const [op, want] of ops) {
        if (big && op !== 'sum' && dtype !== 'f32') continue;
        const t = make(size, dtype, (i) => value(r, i));
        await pg.allReduce(t, { op }).wait();
        check(`allReduce(${op}) ${tag}`, await valuesAsync(t), want);
      }
      if (size <= 7) {
        const t = make(size, dtype, (i) => (i % 2) + 1);
        await pg.allReduce(t, { op: 'prod' }).wait();
        check(`allReduce(prod) ${tag}`, await valuesAsync(t), (i) => ((i % 2) + 1) ** n);
      }
      if (dtype === 'f64' || (dtype === 'f32' && !big)) {
        const t = make(size, dtype, (i) => value(r, i) * n);
        await pg.allReduce(t, { op: 'avg' }).wait();
        check(`allReduce(avg) ${tag}`, await valuesAsync(t), sum);
      }
      const root = n - 1;
      const b = make(size, dtype, (i) => value(r, i));
      await pg.broadcast(b, root).wait();
      check(`broadcast ${tag}`, await valuesAsync(b), (i) => value(root, i));

      if (big && dtype !== 'f32') continue;
      const m = Math.min(size, 65537); // gather/scatter move n x m: keep them small
      const gin = make(m, dtype, (i) => value(r, i));
      const gout = fl.zeros([n * m], { dtype });
      await pg.allGather(gout, gin).wait();
      check(`allGather ${tag}`, await valuesAsync(gout), (j) => value(Math.floor(j / m), j % m));

      const sin = make(n * m, dtype, (j) => value(r, j));
      const sout = fl.zeros([m], { dtype });
      await pg.reduceScatter(sout, sin, { op: 'sum' }).wait();
      check(`reduceScatter ${tag}`, await valuesAsync(sout), (i) => sum(r * m + i));
    }
  }
  if (n > 1) await pointToPoint(pg);
  await subgroups(n, r);
  await pg.barrier().wait();
  await destroyProcessGroup();
  console.log(`rank ${r}: ok`);
}

// newGroup: the even and the odd ranks each reduce among themselves, on connections of their own,
// while the world group still works; every rank creates both groups, in the same order.
async function subgroups(n: number, r: number) {
  const members = (parity: number) => Array.from({ length: n }, (_, k) => k).filter((k) => k % 2 === parity);
  const evens = await newGroup(members(0)),
    odds = await newGroup(members(1));
  const mine = r % 2 === 0 ? evens : odds,
    other = r % 2 === 0 ? odds : evens;
  if (!mine || other) throw new Error(`rank ${r}: expected to be in exactly one of the two groups`);
  const peers = members(r % 2);
  if (mine.size !== peers.length || mine.rank !== peers.indexOf(r) || mine.ranks.join() !== peers.join())
    throw new Error(
      `rank ${r}: group rank ${mine.rank}/${mine.size} of [${mine.ranks.join(', ')}], expected ${peers.indexOf(r)}/${peers.length}`,
    );
  const t = make(1000, 'f32', (i) => value(r, i));
  await allReduce(t, { group: mine }).wait();
  check('subgroup allReduce', await valuesAsync(t), (i) => peers.reduce((a, k) => a + value(k, i), 0));
  const root = mine.size - 1; // a group rank: the group's last member
  const b = make(7, 'i64', (i) => value(r, i));
  await mine.broadcast(b, root).wait();
  check('subgroup broadcast', await valuesAsync(b), (i) => value(peers[root], i));
  const w = make(3, 'f64', () => r);
  await allReduce(w).wait(); // the world group after the subgroups
  check('world allReduce after subgroups', await valuesAsync(w), () => (n * (n - 1)) / 2);
}

async function pointToPoint(pg: Awaited<ReturnType<typeof initProcessGroup>>) {
  const n = pg.size,
    r = pg.rank;
  // a ring of sends, posted so that nobody waits on a recv before its send
  const next = (r + 1) % n,
    prev = (r + n - 1) % n;
  const mine = make(5, 'f32', (i) => r * 10 + i),
    got = fl.zeros([5]);
  if (r % 2 === 0) {
    await pg.send(mine, next).wait();
    await pg.recv(got, prev).wait();
  } else {
    await pg.recv(got, prev).wait();
    await pg.send(mine, next).wait();
  }
  check('send/recv', await valuesAsync(got), (i) => prev * 10 + i);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
