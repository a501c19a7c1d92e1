/**
 * Ordered collectives: the next op on the tensor's device runs after the collective, so its result
 * is used without awaiting the Work. MODE=die: rank 1 leaves after the rendezvous, and rank 0's
 * ordered allReduce must fail the op queued after it with a coded error instead of hanging.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup, allReduce } from '../../../lib/distributed/index';

const value = (r: number, i: number) => ((r * 7 + i * 3) % 11) - 5 + r;

function make(n: number, f: (i: number) => number): fl.Tensor {
  return fl
    .tensor(
      Float64Array.from({ length: n }, (_, i) => f(i)),
      { dtype: 'f64' },
    )
    .to('f32');
}

function check(what: string, data: ArrayLike<number | bigint>, want: (i: number) => number): void {
  const got = Array.from(data, Number);
  for (let i = 0; i < got.length; i++)
    if (Math.abs(got[i] - want(i)) > 1e-6 * Math.max(1, Math.abs(want(i))))
      throw new Error(`${what}: element ${i} is ${got[i]}, expected ${want(i)}`);
}

async function main() {
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: Number(process.env.PG_TIMEOUT_MS ?? 30_000) });
  const n = pg.size,
    r = pg.rank;
  if (process.env.MODE === 'die') {
    if (r === 1) process.exit(0);
    const t = make(1 << 16, (i) => value(r, i));
    pg.allReduce(t, { ordered: true })
      .wait()
      .catch(() => {}); // the failure is read through the op below
    const e = await t
      .mul(2)
      .data()
      .then(
        () => null,
        (err: Error & { code?: string }) => err,
      );
    if (!e?.code) throw new Error(`rank 0: the op after a failed ordered allReduce resolved (${e})`);
    console.log(`rank 0: failed with ${e.code}: ${e.message.split('\n')[0]}`);
    process.exit(0);
  }
  const sum = (i: number) => Array.from({ length: n }, (_, k) => value(k, i)).reduce((a, b) => a + b, 0);
  const size = 1_000_003; // large enough that an unordered read would race the ring

  // allReduce, then an op queued at once: it sees the reduced values.
  const t = make(size, (i) => value(r, i));
  const w = pg.allReduce(t, { ordered: true });
  check('ordered allReduce then mul', await t.mul(2).data(), (i) => 2 * sum(i));
  await w.wait();

  // A chain that never awaits between steps: broadcast → allGather → reduceScatter → an op.
  const b = make(4099, (i) => value(r, i));
  pg.broadcast(b, n - 1, { ordered: true });
  const gathered = fl.zeros([n * 4099]);
  pg.allGather(gathered, b, { ordered: true });
  const input = gathered.mul(1); // queued after the gather: reads its result
  const out = fl.zeros([4099]);
  pg.reduceScatter(out, input, { ordered: true });
  check('ordered chain', await out.add(0).data(), (i) => n * value(n - 1, i));

  // The module-level form and point to point.
  const m = make(7, (i) => value(r, i));
  allReduce(m, { op: 'max', ordered: true });
  check(
    'ordered allReduce(max) via distributed.allReduce',
    await m.neg().data(),
    (i) => -Math.max(...Array.from({ length: n }, (_, k) => value(k, i))),
  );
  if (n > 1) {
    if (r === 0)
      pg.send(
        make(5, (i) => i + 100),
        1,
        { ordered: true },
      );
    if (r === 1) {
      const got = fl.zeros([5]);
      pg.recv(got, 0, { ordered: true });
      check('ordered recv then add', await got.add(1).data(), (i) => i + 101);
    }
  }
  let code = '';
  try {
    pg.allReduce(t, { ordered: 'yes' as unknown as boolean });
  } catch (e) {
    code = (e as { code?: string }).code ?? '';
  }
  if (code !== 'ERR_ARG') throw new Error(`ordered: 'yes' should be ERR_ARG, got '${code}'`);
  await pg.barrier().wait();
  await destroyProcessGroup();
  console.log(`rank ${r}: ok`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
