/**
 * A short DDP run on synthetic data that resumes from its latest checkpoint, for the engine and
 * restart tests. The data of each step depends only on the step, so a resumed run replays exactly
 * what an uninterrupted one would. Environment:
 *   STEPS (24), CKPT_DIR (checkpoint every 4 steps, resume from the latest), OUT (rank 0 writes
 *   the final parameters' bytes there, hex), KILL_AT / KILL_RANK (SIGKILL itself at that step on
 *   the first attempt).
 */
import { writeFileSync } from 'node:fs';
import * as fl from '../../../lib/index';
import { destroyProcessGroup, initProcessGroup } from '../../../lib/distributed/index';
import { readEnv } from '../../../lib/distributed/env';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';

const STEPS = Number(process.env.STEPS ?? 24),
  BATCH = 16,
  EVERY = 4;

async function main() {
  const env = readEnv();
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: 30_000 });
  fl.manualSeed(3);
  const model = new fl.nn.Sequential(new fl.nn.Linear(8, 16), new fl.nn.ReLU(), new fl.nn.Linear(16, 1));
  const ddp = await DistributedDataParallel.create(model, (x: fl.Tensor) => model.forward(x));
  const opt = new fl.optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9 });
  const dir = process.env.CKPT_DIR;
  let start = 0;
  if (dir && (await fl.checkpoint.latest(dir))) start = (await fl.checkpoint.load(dir, { model, optimizer: opt })).step;
  if (start > 0) console.log(`resumed at step ${start} (restart ${process.env.FLOCKML_RESTART_COUNT})`);
  const half = BATCH / pg.size;
  for (let step = start; step < STEPS; step++) {
    if (Number(process.env.KILL_AT) === step && Number(process.env.KILL_RANK ?? 1) === pg.rank && process.env.FLOCKML_RESTART_COUNT === '0')
      process.kill(process.pid, 'SIGKILL');
    fl.manualSeed(1000 + step);
    const x = fl.randn([BATCH, 8]),
      y = x.sum(1, true).tanh();
    fl.tidy(() => {
      opt.zeroGrad();
      fl.nn.functional.mseLoss(ddp.forward(x.narrow(0, pg.rank * half, half)), y.narrow(0, pg.rank * half, half)).backward();
    });
    await ddp.syncGradients();
    fl.tidy(() => opt.step());
    x.dispose();
    y.dispose();
    if (dir && (step + 1) % EVERY === 0) await fl.checkpoint.save(dir, { model, optimizer: opt, step: step + 1 });
  }
  if (pg.rank === 0 && process.env.OUT) {
    const bytes: string[] = [];
    for (const p of model.parameters()) bytes.push(Buffer.from((await p.data()).buffer).toString('hex'));
    writeFileSync(process.env.OUT, bytes.join('\n'));
  }
  console.log(`done engine=${env.engine} rank=${pg.rank} world=${pg.size} local=${env.localRank} token=${env.tokenSource}`);
  await destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
