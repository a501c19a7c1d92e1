/**
 * send/recv between ranks. MODE=stream (default): every rank exchanges messages with every other,
 * pair by pair (the lower rank sends first): f32 longer than a shared-memory pipe, then 50 of
 * varying sizes and dtypes in a row, each checked; prints {"ok":true}. MODE=silent: rank 0 waits
 * on a recv from rank 1, which never sends. MODE=kill: rank 1 SIGKILLs itself while rank 0 waits
 * on its recv. In both rank 0 prints its failure (code, message, ms) and exits 3.
 */
import * as fl from '../../../lib/index';
import type { DType } from '../../../lib/dtype';
import { initProcessGroup } from '../../../lib/distributed/index';

const value = (from: number, k: number, i: number) => ((from * 13 + k * 7 + i) % 97) - 40;

function make(n: number, dtype: DType, f: (i: number) => number): fl.Tensor {
  const a = new Float64Array(n);
  for (let i = 0; i < n; i++) a[i] = f(i);
  return fl.tensor(a, { dtype: 'f64' }).to(dtype);
}

async function check(what: string, t: fl.Tensor, want: (i: number) => number): Promise<void> {
  const got = await t.to('f64').data();
  for (let i = 0; i < got.length; i++) if (got[i] !== want(i)) throw new Error(`${what}: element ${i} is ${got[i]}, expected ${want(i)}`);
}

const messages: [number, DType][] = Array.from({ length: 50 }, (_, k) => [
  (k * 7919) % 20011,
  (['f32', 'f64', 'i64', 'i32'] as DType[])[k % 4],
]);

async function main() {
  const mode = process.env.MODE ?? 'stream';
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: Number(process.env.PG_TIMEOUT_MS ?? 30_000) });
  const r = pg.rank;
  if (mode !== 'stream') {
    await pg.barrier().wait(); // everyone connected
    if (r === 1) {
      if (mode === 'kill') setTimeout(() => process.kill(process.pid, 'SIGKILL'), 200);
      setInterval(() => undefined, 1000);
      return;
    }
    if (r !== 0) return;
    const started = Date.now();
    try {
      await pg.recv(fl.zeros([10]), 1).wait();
      console.log(JSON.stringify({ failed: false }));
      process.exit(0);
    } catch (e) {
      const err = e as Error & { code?: string };
      console.log(JSON.stringify({ failed: true, code: err.code, message: err.message, ms: Date.now() - started }));
      process.exit(3);
    }
  }
  for (let a = 0; a < pg.size; a++)
    for (let b = a + 1; b < pg.size; b++) {
      if (r !== a && r !== b) continue;
      const peer = r === a ? b : a;
      for (const sender of [a, b]) {
        const big = 3_000_007;
        if (r === sender)
          await pg
            .send(
              make(big, 'f32', (i) => value(r, 0, i)),
              peer,
            )
            .wait();
        else {
          const t = fl.zeros([big]);
          await pg.recv(t, peer).wait();
          await check(`${big} f32 from rank ${peer}`, t, (i) => value(peer, 0, i));
        }
        // Many in a row: the sender does not wait for the receiver between them.
        if (r === sender)
          await Promise.all(
            messages.map(([n, dt], k) =>
              pg
                .send(
                  make(n, dt, (i) => value(r, k + 1, i)),
                  peer,
                )
                .wait(),
            ),
          );
        else
          for (const [k, [n, dt]] of messages.entries()) {
            const t = fl.zeros([n], { dtype: dt });
            await pg.recv(t, peer).wait();
            await check(`message ${k + 1} (${dt}[${n}]) from rank ${peer}`, t, (i) => value(peer, k + 1, i));
          }
      }
    }
  await pg.barrier().wait();
  console.log(JSON.stringify({ ok: true, transport: pg.transport }));
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
