/**
 * The layers, functions and optimizers added for PyTorch users' first hour run on a virtual CPU
 * device (cpu:1, its own stream and threads) exactly as on cpu:0: forward, backward and an
 * optimizer step give bit-identical results, and outputs stay on the input's device. With a CUDA
 * device (a GPU, or the CUDA simulator under npm run test:sim) the same cases run on cuda:0 and
 * agree with the CPU within f32 tolerance.
 */
process.env.FLOCKML_CPU_DEVICES ??= '2';

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { values } from '../helpers/values';

const F = fl.nn.functional;

/** Runs `make` (which builds its module and inputs from the seed) on `device`: outputs, input gradient and parameter gradients. */
function run(device: string, make: () => { module?: fl.nn.Module; x: fl.Tensor; forward: (x: fl.Tensor) => fl.Tensor }): number[][] {
  fl.manualSeed(5);
  const { module, x, forward } = make();
  module?.to(device);
  const xd = x.to(device).requiresGrad_();
  const y = forward(xd);
  assert.is(y.device, device, 'output device');
  y.square().sum().backward();
  const grads = module ? module.parameters().map((p) => values(p.grad as fl.Tensor)) : [];
  return [values(y), values(xd.grad as fl.Tensor), ...grads];
}

const cases: Record<string, () => { module?: fl.nn.Module; x: fl.Tensor; forward: (x: fl.Tensor) => fl.Tensor }> = {
  Conv1d: () => {
    const m = new fl.nn.Conv1d(3, 4, 3, { padding: 1, stride: 2 });
    return { module: m, x: fl.randn([2, 3, 9]), forward: (x) => m.forward(x) as fl.Tensor };
  },
  'MaxPool1d + AvgPool1d': () => {
    const a = new fl.nn.MaxPool1d(2);
    const b = new fl.nn.AvgPool1d(3, { stride: 1 });
    return { x: fl.randn([2, 3, 10]), forward: (x) => b.forward(a.forward(x) as fl.Tensor) as fl.Tensor };
  },
  'LSTM (2 layers, bidirectional)': () => {
    const m = new fl.nn.LSTM(4, 5, { numLayers: 2, bidirectional: true, batchFirst: true });
    return { module: m, x: fl.randn([2, 6, 4]), forward: (x) => (m.forward(x) as [fl.Tensor, unknown])[0] };
  },
  GRU: () => {
    const m = new fl.nn.GRU(4, 3);
    return { module: m, x: fl.randn([5, 2, 4]), forward: (x) => (m.forward(x) as [fl.Tensor, unknown])[0] };
  },
  'interpolate bilinear + pad reflect': () => ({
    x: fl.randn([1, 2, 4, 5]),
    forward: (x) => F.pad(F.interpolate(x, { scaleFactor: 2, mode: 'bilinear', alignCorners: true }), [1, 2, 1, 1], { mode: 'reflect' }),
  }),
  'normalize + cosineSimilarity': () => ({
    x: fl.randn([4, 6]),
    forward: (x) => F.cosineSimilarity(F.normalize(x, { dim: 1 }), x.flip([0]), { dim: 1 }),
  }),
  'BCE + KLDiv + Huber losses': () => ({
    x: fl.randn([3, 4]),
    forward: (x) => {
      const p = x.sigmoid();
      const t = fl.full([3, 4], 0.25, { device: x.device });
      return F.binaryCrossEntropy(p, t)
        .add(F.klDiv(x.logSoftmax(1), t, { reduction: 'batchmean' }))
        .add(F.huberLoss(x, t, { delta: 0.5 }));
    },
  }),
};

for (const [name, make] of Object.entries(cases))
  test(`${name}: cpu:1 equals cpu:0 bit for bit`, () => {
    assert.equal(run('cpu:1', make), run('cpu', make));
  });

if (fl.cuda.isAvailable())
  for (const [name, make] of Object.entries(cases))
    test(`${name}: cuda:0 agrees with the CPU`, () => {
      const want = run('cpu', make);
      const got = run('cuda:0', make);
      want.forEach((w, i) =>
        w.forEach((v, j) =>
          assert.ok(Math.abs(got[i][j] - v) <= 1e-4 * (1 + Math.abs(v)), `${name}: output ${i}[${j}]: ${got[i][j]} vs ${v}`),
        ),
      );
    });

test('unique on cpu:1 equals cpu:0', () => {
  const x = fl.tensor([3, 1, 2, 3, 1, 5]);
  const a = fl.unique(x.to('cpu:1'), { returnInverse: true, returnCounts: true }) as {
    values: fl.Tensor;
    inverseIndices: fl.Tensor;
    counts: fl.Tensor;
  };
  const b = fl.unique(x, { returnInverse: true, returnCounts: true }) as {
    values: fl.Tensor;
    inverseIndices: fl.Tensor;
    counts: fl.Tensor;
  };
  assert.is(a.values.device, 'cpu:1');
  assert.equal(values(a.values), values(b.values));
  assert.equal(Array.from(a.counts.to('cpu').dataSync() as BigInt64Array), Array.from(b.counts.dataSync() as BigInt64Array));
});

for (const name of ['RMSprop', 'Adagrad'] as const)
  test(`${name}: three steps on cpu:1 equal cpu:0 bit for bit`, async () => {
    const steps = async (device: string) => {
      fl.manualSeed(9);
      const m = new fl.nn.Linear(6, 3);
      m.to(device);
      const opt =
        name === 'RMSprop'
          ? new fl.optim.RMSprop(m.parameters(), { lr: 0.01, momentum: 0.9, centered: true })
          : new fl.optim.Adagrad(m.parameters(), { lr: 0.1, lrDecay: 0.01 });
      const x = fl.randn([8, 6]).to(device);
      for (let i = 0; i < 3; i++) {
        opt.zeroGrad();
        (m.forward(x) as fl.Tensor).square().mean().backward();
        await opt.step();
      }
      return m.parameters().map(values);
    };
    assert.equal(await steps('cpu:1'), await steps('cpu'));
  });

test.run();
