/**
 * destroyProcessGroup() when a peer has died: the last rank SIGKILLs itself after one allreduce;
 * the others (rank 0 among them, which hosts the store) call destroyProcessGroup() and print how
 * long it took as JSON. The group and store timeout is 30 s: returning well before it shows that
 * no rank waited for the dead one.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup } from '../../../lib/distributed/index';

async function main() {
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: 30_000 });
  await pg.allReduce(fl.ones([16])).wait();
  if (pg.rank === pg.size - 1) process.kill(process.pid, 'SIGKILL');
  // Give the dead rank's sockets time to close, as a crash some time before the end would.
  await new Promise((r) => setTimeout(r, 500));
  const t0 = Date.now();
  await destroyProcessGroup();
  console.log(JSON.stringify({ rank: pg.rank, destroyMs: Date.now() - t0 }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
