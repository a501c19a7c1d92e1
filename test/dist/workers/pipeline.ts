/**
 * Pipeline across ranks. Every rank first trains the whole model in one process (the reference),
 * then its own stage of the same model in the pipeline, and compares its stage's parameters with
 * the reference's after STEPS steps (f64, so only the order of the micro-batch sums differs).
 *
 *   pipeline.ts equal <gpipe|1f1b>...  stages = world size, one pipeline, each schedule in turn, then
 *                                      inference through it (DistributedPipeline.forward)
 *   pipeline.ts dp                     4 ranks: 2 stages x 2 replicas (DDP over each stage's replicas)
 *   pipeline.ts large                  2 ranks: 8.4 MB activations and gradients per message (1F1B)
 *   pipeline.ts mismatch               2 ranks: stage 1 declares an input its neighbour does not send;
 *                                      then (a new group) runs 2 micro-batches where stage 0 runs 4
 *   pipeline.ts dead                   2 ranks: stage 1's process exits in the middle of step 2
 *   pipeline.ts failstop <schedule>    stages = world size: stage FAIL_STAGE's allocation fails in step 2
 *                                      (fail-stop): every stage's step 2 rejects and none applies it
 * Prints one JSON line per phase: {"rank", "phase", "ok"} or {"rank", "phase", "code", "message"}.
 */
import * as fl from '../../../lib/index';
import { native } from '../../../lib/native';
import { destroyProcessGroup, initProcessGroup, newGroup } from '../../../lib/distributed/index';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';
import { close } from '../../helpers/reference';
import { valuesAsync } from '../../helpers/values';
import { DistributedPipeline, type DistributedPipelineOptions } from '../../../lib/parallel/pipeline_ranks';
import type { ProcessGroup } from '../../../lib/distributed/process_group';
import { backend, dev, device } from './backend';

const STEPS = 10,
  BATCH = 26, // split into 4 micro-batches of 7, 7, 7 and 5 rows: the weighting is exercised
  MICRO = 4,
  LR = 0.1;
const [mode, ...schedules] = process.argv.slice(2);

/** Seven layers; a cut into p stages keeps each Linear with its activation. */
function layers(): fl.nn.Module[] {
  fl.manualSeed(2024);
  const o = { dtype: 'f64' as const, device };
  return [
    new fl.nn.Linear(8, 16, o),
    new fl.nn.Tanh(),
    new fl.nn.Linear(16, 16, o),
    new fl.nn.Tanh(),
    new fl.nn.Linear(16, 12, o),
    new fl.nn.Tanh(),
    new fl.nn.Linear(12, 1, o),
  ];
}
const CUTS: Record<number, number[]> = { 1: [0, 7], 2: [0, 2, 7], 3: [0, 2, 4, 7] };

function data() {
  fl.manualSeed(99);
  return {
    x: fl.keep(dev(fl.randn([STEPS * BATCH, 8], { dtype: 'f64' }))),
    y: fl.keep(dev(fl.randn([STEPS * BATCH, 1], { dtype: 'f64' }))),
  };
}

const mse = (out: fl.Tensor, y: fl.Tensor) => out.sub(y).square().mean();

/** The reference: the whole model, the whole batch, one process. Returns its layers and losses. */
async function reference(x: fl.Tensor, y: fl.Tensor) {
  const ls = layers();
  const model = new fl.nn.Sequential(...ls);
  const opt = new fl.optim.SGD(model.parameters(), { lr: LR });
  const losses: number[] = [];
  for (let s = 0; s < STEPS; s++) {
    const loss = fl.tidy(() => {
      const l = mse(model.forward(x.narrow(0, s * BATCH, BATCH)), y.narrow(0, s * BATCH, BATCH));
      l.backward();
      return l;
    });
    losses.push(await loss.item());
    loss.dispose();
    fl.tidy(() => opt.step());
    opt.zeroGrad();
  }
  return { layers: ls, losses };
}

/** Trains stage `stage` of `stages` in a pipeline over `group`; rows [from, from + rows) of every batch. */
async function trainStage(
  group: ProcessGroup,
  schedule: 'gpipe' | '1f1b',
  x: fl.Tensor,
  y: fl.Tensor,
  opts: { dp?: ProcessGroup; from?: number; rows?: number } = {},
) {
  const stage = group.rank;
  const cut = CUTS[group.size];
  const module = new fl.nn.Sequential(...layers().slice(cut[stage], cut[stage + 1]));
  const wrapped = opts.dp ? await DistributedDataParallel.create(module, (t: fl.Tensor) => module.forward(t), { group: opts.dp }) : module;
  const pipe = new DistributedPipeline(wrapped, { group, microBatches: MICRO, schedule });
  const opt = new fl.optim.SGD(module.parameters(), { lr: LR });
  const from = opts.from ?? 0,
    rows = opts.rows ?? BATCH;
  const losses: number[] = [];
  for (let s = 0; s < STEPS; s++) {
    const at = s * BATCH + from;
    const loss = await pipe.step(pipe.isFirst ? x.narrow(0, at, rows) : null, pipe.isLast ? y.narrow(0, at, rows) : null, mse);
    losses.push(await loss.item());
    loss.dispose();
    fl.tidy(() => opt.step());
    opt.zeroGrad();
  }
  const st = pipe.stats()!;
  if (schedule === '1f1b' && st.peakLiveActivations > group.size - stage)
    throw new Error(`1f1b: stage ${stage} held ${st.peakLiveActivations} micro-batches, more than ${group.size - stage}`);
  if (schedule === 'gpipe' && st.peakLiveActivations !== MICRO)
    throw new Error(`gpipe: stage ${stage} held ${st.peakLiveActivations} micro-batches, not ${MICRO}`);
  return { module, losses, pipe };
}

async function equal(pg: ProcessGroup, x: fl.Tensor, y: fl.Tensor) {
  const ref = await reference(x, y);
  const cut = CUTS[pg.size];
  const mine = new fl.nn.Sequential(...ref.layers.slice(cut[pg.rank], cut[pg.rank + 1]));
  for (const schedule of schedules as ('gpipe' | '1f1b')[]) {
    const got = await trainStage(pg, schedule, x, y);
    close(
      await valuesAsync(got.module.parameters()),
      await valuesAsync(mine.parameters()),
      1e-9,
      1e-10,
      `${schedule} stage ${pg.rank} parameter`,
      false,
    );
    close(got.losses, ref.losses, 1e-9, 1e-10, `${schedule} loss at step`, false);
    console.log(JSON.stringify({ rank: pg.rank, phase: schedule, ok: true }));
    // Inference through the trained pipeline: the last stage gets the whole model's output.
    const out = await got.pipe.forward(pg.rank === 0 ? x.narrow(0, 0, BATCH) : null);
    if ((out === null) !== (pg.rank !== pg.size - 1)) throw new Error(`forward gave ${out} on stage ${pg.rank}`);
    if (out) {
      const want = fl.noGrad(() => new fl.nn.Sequential(...ref.layers).forward(x.narrow(0, 0, BATCH)));
      close(await valuesAsync([out]), await valuesAsync([want]), 1e-9, 1e-10, `${schedule} forward output`, false);
    }
  }
}

async function dataParallel(pg: ProcessGroup, x: fl.Tensor, y: fl.Tensor) {
  // Ranks 0, 1: replica 0's stages 0, 1; ranks 2, 3: replica 1's. Every rank makes every group.
  const pipes = [await newGroup([0, 1]), await newGroup([2, 3])];
  const dps = [await newGroup([0, 2]), await newGroup([1, 3])];
  const replica = Math.floor(pg.rank / 2),
    stage = pg.rank % 2;
  const ref = await reference(x, y);
  const half = BATCH / 2;
  const got = await trainStage(pipes[replica]!, '1f1b', x, y, { dp: dps[stage]!, from: replica * half, rows: half });
  const mine = new fl.nn.Sequential(...ref.layers.slice(CUTS[2][stage], CUTS[2][stage + 1]));
  close(
    await valuesAsync(got.module.parameters()),
    await valuesAsync(mine.parameters()),
    1e-9,
    1e-10,
    `replica ${replica} stage ${stage} parameter`,
    false,
  );
  console.log(JSON.stringify({ rank: pg.rank, phase: 'dp', ok: true }));
}

async function large(pg: ProcessGroup, x: fl.Tensor, y: fl.Tensor) {
  const WIDE = 150_000; // 7 rows x 150k x 8 bytes: 8.4 MB per activation and per gradient
  const make = () => {
    fl.manualSeed(5);
    return [new fl.nn.Linear(8, WIDE, { dtype: 'f64' }), new fl.nn.Tanh(), new fl.nn.Linear(WIDE, 1, { dtype: 'f64' })];
  };
  const ref = new fl.nn.Sequential(...make());
  const want: number[] = [];
  for (let s = 0; s < 2; s++)
    want.push(await fl.tidy(() => mse(ref.forward(x.narrow(0, s * BATCH, BATCH)), y.narrow(0, s * BATCH, BATCH))).item());
  for (const schedule of ['1f1b'] as const) {
    const all = make();
    const module = new fl.nn.Sequential(...(pg.rank === 0 ? all.slice(0, 2) : all.slice(2)));
    const pipe = new DistributedPipeline(module, { group: pg, microBatches: MICRO, schedule });
    const got: number[] = [];
    for (let s = 0; s < 2; s++) {
      const loss = await pipe.step(
        pipe.isFirst ? x.narrow(0, s * BATCH, BATCH) : null,
        pipe.isLast ? y.narrow(0, s * BATCH, BATCH) : null,
        mse,
      );
      got.push(await loss.item());
      loss.dispose();
      module.zeroGrad();
    }
    close(got, want, 1e-9, 1e-10, `${schedule} large-activation loss at step`, false);
    console.log(JSON.stringify({ rank: pg.rank, phase: `large ${schedule}`, ok: true }));
  }
}

async function failing(pg: ProcessGroup, x: fl.Tensor, y: fl.Tensor) {
  const cut = CUTS[2];
  const module = new fl.nn.Sequential(...layers().slice(cut[pg.rank], cut[pg.rank + 1]));
  let calls = 0;
  const stage = {
    parameters: () => module.parameters(),
    forward: (t: fl.Tensor) => {
      if (mode === 'dead' && pg.rank === 1 && ++calls === MICRO + 2) process.exit(7);
      return module.forward(t);
    },
  };
  const attempt = async (phase: string, group: ProcessGroup, options: Partial<DistributedPipelineOptions>) => {
    const pipe = new DistributedPipeline(stage, { group, microBatches: MICRO, ...options });
    const t0 = performance.now();
    try {
      for (let s = 0; s < 3; s++) {
        const loss = await pipe.step(
          pipe.isFirst ? x.narrow(0, s * BATCH, BATCH) : null,
          pipe.isLast ? y.narrow(0, s * BATCH, BATCH) : null,
          mse,
        );
        loss.dispose();
      }
      console.log(JSON.stringify({ rank: pg.rank, phase, ok: true }));
    } catch (e) {
      const err = e as Error & { code?: string };
      console.log(JSON.stringify({ rank: pg.rank, phase, code: err.code, message: err.message, ms: Math.round(performance.now() - t0) }));
      // The store's closing barrier would wait out its timeout for a rank that is gone.
      if (mode === 'dead') process.exit(0);
    }
  };
  const second = pg.rank === 1;
  await attempt(mode, pg, mode === 'mismatch' && second ? { inputShape: [5] } : {});
  // The failed step destroyed the group on both ranks; a new one, and stages given different
  // micro-batch counts.
  if (mode === 'mismatch') await attempt('mismatch-micro', (await newGroup([0, 1]))!, second ? { microBatches: 2 } : {});
}

/** Fail-stop (README "Execution"): step 2 fails on one stage; no stage applies it. */
async function failStop(pg: ProcessGroup, x: fl.Tensor, y: fl.Tensor) {
  const failStage = Number(process.env.FAIL_STAGE ?? 0),
    failStep = 2;
  const schedule = (schedules[0] ?? 'gpipe') as 'gpipe' | '1f1b';
  const cut = CUTS[pg.size];
  const module = new fl.nn.Sequential(...layers().slice(cut[pg.rank], cut[pg.rank + 1]));
  const pipe = new DistributedPipeline(module, { group: pg, microBatches: MICRO, schedule });
  const opt = new fl.optim.SGD(module.parameters(), { lr: LR });
  const errors: { step: number; code?: string; message: string }[] = [];
  let unchanged = true;
  for (let s = 0; s <= failStep; s++) {
    const before = s === failStep ? await valuesAsync(module.parameters()) : [];
    try {
      if (s === failStep && pg.rank === failStage) native.failAllocAfter(3);
      const at = s * BATCH;
      const loss = await pipe.step(pipe.isFirst ? x.narrow(0, at, BATCH) : null, pipe.isLast ? y.narrow(0, at, BATCH) : null, mse);
      await loss.item();
      loss.dispose();
      fl.tidy(() => opt.step());
      await fl.sync();
    } catch (e) {
      const err = e as Error & { code?: string };
      errors.push({ step: s, code: err.code, message: err.message.split('\n')[0] });
    }
    native.failAllocAfter(-1);
    opt.zeroGrad();
    if (s === failStep) unchanged = JSON.stringify(before) === JSON.stringify(await valuesAsync(module.parameters()));
  }
  console.log(JSON.stringify({ rank: pg.rank, phase: 'failstop', errors, unchanged }));
}

async function main() {
  const pg = await initProcessGroup({ backend, timeoutMs: 30_000 });
  const { x, y } = data();
  if (mode === 'failstop') await failStop(pg, x, y);
  else if (mode === 'equal') await equal(pg, x, y);
  else if (mode === 'dp') await dataParallel(pg, x, y);
  else if (mode === 'large') await large(pg, x, y);
  else await failing(pg, x, y);
  await destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
