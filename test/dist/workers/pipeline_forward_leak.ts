/**
 * DistributedPipeline.forward() whose receive fails: rank 0 sends the header of a [64, 256]
 * activation and dies before its data; rank 1 (the last stage) must reject with a coded error and
 * hold no more bytes than before the call (the buffer allocated for the activation is freed).
 */
import * as fl from '../../../lib/index';
import { initProcessGroup } from '../../../lib/distributed/index';
import { DistributedPipeline } from '../../../lib/parallel/pipeline_ranks';
import { headerOf } from '../../../lib/parallel/pipeline_ranks_step';

async function main() {
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: 10_000 });
  await pg.barrier().wait();
  if (pg.rank === 0) {
    const header = headerOf(fl.zeros([64, 256]), 'cpu', { mode: 'forward', microBatches: 1, micro: 0 });
    await pg.send(header, 1).wait();
    process.kill(process.pid, 'SIGKILL');
    return;
  }
  const pipe = new DistributedPipeline(new fl.nn.Linear(256, 256), { group: pg, microBatches: 1 });
  await fl.sync();
  const before = fl.memory().cpu.bytes;
  let code: string | undefined;
  try {
    await pipe.forward(null);
  } catch (e) {
    code = (e as { code?: string }).code;
  }
  await fl.sync();
  const leaked = fl.memory().cpu.bytes - before;
  console.log(JSON.stringify({ rank: pg.rank, code, leaked }));
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
