/**
 * Which transport ring groups pick. TRANSPORTS (comma-separated, one per rank) sets each rank's
 * FLOCKML_TRANSPORT. Prints one JSON line: the world group's and a subgroup's transport, the
 * flockml segments left in /dev/shm once every rank has connected (none: their names are unlinked
 * at set-up), and an allReduce result; or {"error": code, "message"} when initialisation fails.
 */
import { readdirSync } from 'node:fs';
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup, newGroup } from '../../../lib/distributed/index';

const segments = () => readdirSync('/dev/shm').filter((f) => f.startsWith('flockml-'));

async function main() {
  const mine = (process.env.TRANSPORTS ?? '').split(',')[Number(process.env.RANK)];
  if (mine !== undefined) process.env.FLOCKML_TRANSPORT = mine;
  let pg: Awaited<ReturnType<typeof initProcessGroup>>;
  try {
    pg = await initProcessGroup({ backend: 'ring', timeoutMs: 20_000 });
  } catch (e) {
    const err = e as Error & { code?: string };
    console.log(JSON.stringify({ error: err.code, message: err.message }));
    process.exit(0);
  }
  const sub = await newGroup(Array.from({ length: pg.size }, (_, k) => k).filter((k) => k !== 0));
  await pg.barrier().wait();
  const left = segments();
  const t = fl.full([1000], pg.rank + 1);
  await pg.allReduce(t).wait();
  const sum = Array.from(await t.data(), Number);
  console.log(
    JSON.stringify({
      transport: pg.transport,
      sub: sub?.transport ?? null,
      segments: left,
      sum: sum.every((v) => v === sum[0]) ? sum[0] : sum,
    }),
  );
  await destroyProcessGroup();
  console.log(JSON.stringify({ destroyed: pg.transport }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
