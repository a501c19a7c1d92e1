/**
 * GradScaler under a process group: rank 1 injects an inf gradient on the second step; every rank
 * must skip that step and back off the scale, so the replicas stay identical.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup } from '../../../lib/distributed/index';
import { backend, device } from '../../dist/workers/backend';

async function main() {
  const pg = await initProcessGroup({ backend, timeoutMs: 30_000 });
  const p = new fl.nn.Parameter(fl.ones([4], { device }));
  const opt = new fl.optim.SGD([p], { lr: 0.25 });
  const scaler = new fl.amp.GradScaler({ initScale: 1024, growthInterval: 100 });
  const taken: boolean[] = [];
  for (let s = 0; s < 3; s++) {
    opt.zeroGrad();
    const bad = s === 1 && pg.rank === 1;
    const x = fl.tensor([1, 2, 3, bad ? Number.POSITIVE_INFINITY : 4], { device });
    scaler.scale(p.mul(x).sum()).backward();
    taken.push(await scaler.step(opt));
    scaler.update();
  }
  const want = [true, false, true];
  if (JSON.stringify(taken) !== JSON.stringify(want)) throw new Error(`rank ${pg.rank}: steps taken ${taken}, expected ${want}`);
  if (scaler.getScale() !== 512) throw new Error(`rank ${pg.rank}: scale ${scaler.getScale()}, expected 512`);
  const got = Array.from(await p.data(), Number);
  const expect = [1, 1, 1, 1].map((v, k) => v - 2 * 0.25 * [1, 2, 3, 4][k]);
  if (JSON.stringify(got) !== JSON.stringify(expect)) throw new Error(`rank ${pg.rank}: params ${got}, expected ${expect}`);
  await destroyProcessGroup();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
