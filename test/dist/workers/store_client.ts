/** A store client for store.test.ts: MODE selects the scenario. */
import { Store } from '../../../lib/distributed/store';

async function main() {
  const port = Number(process.env.MASTER_PORT),
    rank = Number(process.env.RANK);
  const store = await Store.connect({
    host: '127.0.0.1',
    port,
    token: process.env.FLOCKML_TOKEN ?? '',
    isServer: rank === 0,
    timeoutMs: 20_000,
  });
  await store.set(`hello/${rank}`, `from ${rank}`);
  const other = await store.get(`hello/${1 - rank}`);
  if (other !== `from ${1 - rank}`) throw new Error(`got ${other}`);
  await store.barrier(2, 'first');
  const n = await store.add('counter', 5);
  await store.barrier(2, 'second');
  if (Number(await store.get('counter')) !== 10) throw new Error(`counter is ${await store.get('counter')} (last add gave ${n})`);
  await store.barrier(2, 'end');
  await store.close();
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
