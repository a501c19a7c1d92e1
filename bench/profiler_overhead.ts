/**
 * What profiling costs a training step (MLP and CNN, batch 64, CPU). Prints one JSON line per model and mode:
 *   never       profiling never started (the anchor, run first)
 *   never-again the same again, in the same process: the noise between two identical runs
 *   after-stop  after a profiler has started and stopped (the addon's functions restored)
 *   on          while a profiler records every kernel and op call
 * with the median ms per step over several blocks and the ratio to the anchor.
 *   npx tsx bench/profiler_overhead.ts [--steps N]
 */
import * as fl from '../lib/index';

const argSteps = process.argv.indexOf('--steps');
const STEPS = argSteps >= 0 ? Number(process.argv[argSteps + 1]) : 20;
const BLOCKS = 5;

type Model = fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor };

function mlp(): Model {
  const { nn } = fl;
  return new nn.Sequential(new nn.Flatten(), new nn.Linear(784, 256), new nn.ReLU(), new nn.Linear(256, 10));
}

function cnn(): Model {
  const { nn } = fl;
  return new nn.Sequential(
    new nn.Conv2d(1, 16, 3),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Linear(16 * 13 * 13, 64),
    new nn.ReLU(),
    new nn.Linear(64, 10),
  );
}

async function msPerStep(model: Model, opt: fl.optim.Adam, x: fl.Tensor, y: fl.Tensor): Promise<number> {
  const blocks: number[] = [];
  for (let b = 0; b < BLOCKS; b++) {
    const t0 = performance.now();
    for (let s = 0; s < STEPS; s++) {
      fl.tidy(() => {
        const l = fl.nn.functional.crossEntropy(model.forward(x), y);
        opt.zeroGrad();
        l.backward();
        opt.step();
      });
      await fl.ready();
    }
    await fl.sync();
    blocks.push((performance.now() - t0) / STEPS);
  }
  blocks.sort((a, b) => a - b);
  return blocks[Math.floor(BLOCKS / 2)];
}

async function main(): Promise<void> {
  for (const [name, make] of [
    ['mlp', mlp],
    ['cnn', cnn],
  ] as const) {
    fl.manualSeed(0);
    const model = make();
    const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
    const x = fl.randn([64, 1, 28, 28]);
    const y = fl.randint(0, 10, [64]);
    await msPerStep(model, opt, x, y); // warm-up: optimizer state, allocator cache, thread pool
    const anchor = await msPerStep(model, opt, x, y);
    const report = (mode: string, ms: number, extra: Record<string, unknown> = {}) =>
      console.log(
        JSON.stringify({
          bench: 'profiler_overhead',
          model: name,
          batch: 64,
          mode,
          ms_per_step: Number(ms.toFixed(3)),
          vs_never: Number((ms / anchor).toFixed(3)),
          ...extra,
        }),
      );
    report('never', anchor);
    report('never-again', await msPerStep(model, opt, x, y));
    fl.profiler.start().stop();
    report('after-stop', await msPerStep(model, opt, x, y));
    let events = 0;
    const p = fl.profiler.start({ recordShapes: true });
    const on = await msPerStep(model, opt, x, y);
    p.stop();
    events = p.events().length;
    report('on', on, { events });
    x.dispose();
    y.dispose();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
