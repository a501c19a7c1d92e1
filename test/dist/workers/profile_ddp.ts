/** One DDP step on the ring backend under the profiler; writes trace.rank<R>.json into argv[2]. */
import { join } from 'node:path';
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup } from '../../../lib/distributed/index';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';

async function main() {
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: 30_000 });
  fl.manualSeed(0);
  const model = new fl.nn.Sequential(new fl.nn.Linear(16, 32), new fl.nn.ReLU(), new fl.nn.Linear(32, 4));
  const ddp = await DistributedDataParallel.create(model, (x: fl.Tensor) => model.forward(x));
  const x = fl.randn([8, 16]);
  const prof = await fl.profiler.profile({ activities: ['cpu', 'comm'] }, async () => {
    fl.tidy(() => ddp.forward(x).square().mean().backward());
    await ddp.syncGradients();
    await fl.sync();
  });
  prof.exportChromeTrace(join(process.argv[2], `trace.rank${pg.rank}.json`));
  await destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
