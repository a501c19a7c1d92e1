/** For the launcher test: joins the world (rank 0 hosts the store on MASTER_PORT), says so, then idles forever. */
import { initProcessGroup } from '../../../lib/distributed/index';

async function main() {
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: 20_000 });
  console.log(`ready rank=${pg.rank} pid=${process.pid}`);
  setInterval(() => undefined, 1000);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
