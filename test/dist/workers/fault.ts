/**
 * Fault injection. MODE=kill: the last rank SIGKILLs itself while the others are inside a large
 * allreduce. MODE=silent: the last rank stays alive but stops taking part. MODE=destroy: the last
 * rank destroys its group while the others still use it. Survivors print the error's code and
 * message as JSON and exit 3.
 */
import * as fl from '../../../lib/index';
import { reportFailure } from './report';
import { initProcessGroup } from '../../../lib/distributed/index';
import { backend, device } from './backend';

async function main() {
  const mode = process.env.MODE ?? 'kill';
  const pg = await initProcessGroup({ backend, timeoutMs: Number(process.env.PG_TIMEOUT_MS ?? 30_000) });
  const victim = pg.size - 1;
  const t = fl.ones([4 << 20], { device });
  await pg.allReduce(t).wait(); // everyone is connected and working
  if (pg.rank === victim) {
    if (mode === 'kill') setTimeout(() => process.kill(process.pid, 'SIGKILL'), 50);
    else setInterval(() => undefined, 1000); // alive, silent
    if (mode === 'destroy') {
      await new Promise((r) => setTimeout(r, 200));
      pg.destroy();
      return;
    }
    if (mode === 'kill') for (;;) await pg.allReduce(t).wait();
    return;
  }
  const started = Date.now();
  try {
    for (let i = 0; i < 1000; i++) await pg.allReduce(t).wait();
    console.log(JSON.stringify({ failed: false }));
    process.exit(0);
  } catch (e) {
    await reportFailure(pg, e, started);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
