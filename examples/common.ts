/** Shared parts of the Fashion-MNIST examples: arguments, training (with a progress bar) and evaluation. */
import * as fl from '../lib';

export function parseArgs(argv = process.argv.slice(2)): { epochs: number; limit?: number } {
  const get = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? Number(argv[i + 1]) : undefined;
  };
  const epochs = get('epochs') ?? 1;
  if (!Number.isInteger(epochs) || epochs < 1) throw new RangeError(`--epochs must be a positive integer, got ${epochs}`);
  return { epochs, limit: get('limit') };
}

type Model = fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor };

/** The CNN of the examples: two conv blocks and two linear layers. */
export function cnn(): Model {
  const { nn } = fl;
  return new nn.Sequential(
    new nn.Conv2d(1, 32, 3),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Conv2d(32, 64, 3),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Linear(1600, 128),
    new nn.ReLU(),
    new nn.Linear(128, 10),
  );
}

// Fashion-MNIST pixel mean and std (as torchvision's Normalize): centred inputs train faster.
const MEAN = 0.286,
  STD = 0.353;
export const normalize = (x: fl.Tensor): fl.Tensor => x.sub(MEAN).div(STD);

/** Trains `model` with Adam (lr 1e-3) and returns the step count and the mean ms per step. */
export async function train(
  model: Model,
  batchSize: number,
  epochs: number,
  limit?: number,
): Promise<{ steps: number; msPerStep: number; lastLoss: number }> {
  fl.manualSeed(0);
  const train = fl.datasets.fashionMNIST({ split: 'train', limit });
  const loader = new fl.data.DataLoader(train, { batchSize, shuffle: true, seed: 0 });
  const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
  model.train();
  let steps = 0,
    lastLoss = NaN;
  const started = performance.now();
  for (let e = 0; e < epochs; e++) {
    const bar = fl.utils.progress(loader, { desc: `epoch ${e + 1}/${epochs}` });
    for await (const [x, y] of bar) {
      const loss = fl.tidy(() => {
        const l = fl.nn.functional.crossEntropy(model.forward(normalize(x)), y);
        opt.zeroGrad();
        l.backward();
        opt.step();
        return l;
      });
      steps++;
      // Reading the loss is a sync point: only now and then, so the queue stays full.
      if (steps % 50 === 0 || steps === loader.length * epochs) {
        lastLoss = await loss.item();
        bar.setPostfix({ loss: lastLoss });
      }
      loss.dispose();
      x.dispose();
      y.dispose();
    }
  }
  await fl.sync();
  return { steps, msPerStep: (performance.now() - started) / steps, lastLoss };
}

export async function evaluate(model: Model): Promise<number> {
  const test = fl.datasets.fashionMNIST({ split: 'test' });
  const loader = new fl.data.DataLoader(test, { batchSize: 1000 });
  model.eval();
  let correct = 0;
  for (const [x, y] of loader) {
    correct += await fl.noGrad(() => fl.tidy(() => model.forward(normalize(x)).argmax(1).eq(y).sum())).item();
    x.dispose();
    y.dispose();
  }
  return correct / test.length;
}

/** The value after `--name` on the command line, if the flag is there. */
export function option(name: string, argv = process.argv): string | undefined {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
}

/** The arguments of the two-device examples: parseArgs's, --batch (default 128) and --devices (default cpu:0,cpu:1). */
export function deviceArgs(): { epochs: number; limit?: number; batchSize: number; devices: string[] } {
  return {
    ...parseArgs(),
    batchSize: Number(option('batch') ?? 128),
    devices: (option('devices') ?? 'cpu:0,cpu:1').split(','),
  };
}

type Batch = fl.Tensor[];

/**
 * The training loop of the parallel examples: `epochs` passes over `loader` behind a progress bar,
 * `step` run on each batch and giving back its loss (disposed here with the batch), the loss and
 * `postfix()`'s fields shown every 50 steps. Returns the step count and the mean ms per step.
 */
export async function trainEpochs(
  loader: Iterable<Batch> | AsyncIterable<Batch>,
  epochs: number,
  step: (x: fl.Tensor, y: fl.Tensor) => fl.Tensor | Promise<fl.Tensor>,
  options: { beforeEpoch?: (epoch: number) => void; rank0Only?: boolean; postfix?: () => Record<string, number> } = {},
): Promise<{ steps: number; msPerStep: number }> {
  let steps = 0;
  const started = performance.now();
  for (let e = 0; e < epochs; e++) {
    options.beforeEpoch?.(e);
    const bar = fl.utils.progress(loader, { desc: `epoch ${e + 1}/${epochs}`, ...(options.rank0Only ? { rank0Only: true } : {}) });
    for await (const [x, y] of bar) {
      const loss = await step(x, y);
      steps++;
      if (steps % 50 === 0) bar.setPostfix({ loss: await loss.item(), ...options.postfix?.() });
      loss.dispose();
      x.dispose();
      y.dispose();
    }
  }
  await fl.sync();
  return { steps, msPerStep: (performance.now() - started) / steps };
}
