/** DataParallel: mirrored replicas on 2 and 4 devices against one-device training. */
import { deviceSets, localGroups, maxParamDiff } from './devices';
import { values } from '../helpers/values';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { cnn } from '../../examples/common';

const { nn } = fl;
const F = fl.nn.functional;

function mlp(bn = false): fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor } {
  fl.manualSeed(3);
  return bn
    ? new nn.Sequential(new nn.Linear(8, 16), new nn.BatchNorm1d(16), new nn.ReLU(), new nn.Linear(16, 4))
    : new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Linear(16, 4));
}

function batches(steps: number, size: number): [fl.Tensor, fl.Tensor][] {
  fl.manualSeed(7);
  return Array.from({ length: steps }, () => [fl.randn([size, 8]), fl.randint(0, 4, [size])]);
}

/** Ten plain SGD-with-momentum steps on one device. */
function reference(model: fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor }, data: [fl.Tensor, fl.Tensor][], accumulate = 1) {
  const opt = new fl.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
  for (const [x, y] of data) {
    const size = x.shape[0] / accumulate;
    for (let k = 0; k < accumulate; k++)
      fl.tidy(() =>
        F.crossEntropy(model.forward(x.narrow(0, k * size, size)), y.narrow(0, k * size, size))
          .div(accumulate)
          .backward(),
      );
    opt.step();
    opt.zeroGrad();
  }
}

for (const n of [2, 4]) {
  for (const devices of deviceSets(n, `DataParallel x${n}`)) {
    test(`${devices.join(',')}: 10 steps match one device within f32 tolerance, replicas bit-identical`, async () => {
      const data = batches(10, 16);
      const single = mlp();
      reference(single, data);
      const dp = await fl.parallel.DataParallel.create(mlp(), { devices, groups: await localGroups(devices), bucketCapMB: 0.0005 });
      const opt = dp.optimizer(fl.optim.SGD, { lr: 0.1, momentum: 0.9 });
      assert.ok(dp.bucketCount > 1);
      for (const [x, y] of data) {
        const loss = F.crossEntropy(dp.forward(x), y.to(dp.outputDevice));
        loss.backward();
        // Every bucket's reduction was started from the gradient hooks during backward.
        assert.is(dp.bucketsInFlight, dp.bucketCount);
        await dp.step();
        opt.zeroGrad();
      }
      assert.ok(maxParamDiff(dp.replicas[0].parameters(), single.parameters()) < 1e-5);
      for (const r of dp.replicas.slice(1)) {
        r.parameters().forEach((p, i) => assert.equal(values(p), values(dp.replicas[0].parameters()[i])));
      }
      dp.replicas.forEach((r, i) =>
        assert.ok(
          r.parameters().every((p) => fl.sameDevice(p.device, devices[i])),
          `replica ${i} on ${devices[i]}`,
        ),
      );
    });

    test(`${devices.join(',')}: noSync accumulates locally and the next step reduces the sum`, async () => {
      const data = batches(3, 16);
      const single = mlp();
      reference(single, data, 2);
      const dp = await fl.parallel.DataParallel.create(mlp(), { devices, groups: await localGroups(devices) });
      const opt = dp.optimizer(fl.optim.SGD, { lr: 0.1, momentum: 0.9 });
      for (const [x, y] of data) {
        const half = (k: number) => F.crossEntropy(dp.forward(x.narrow(0, k * 8, 8)), y.narrow(0, k * 8, 8).to(dp.outputDevice)).div(2);
        dp.noSync(() => half(0).backward());
        half(1).backward();
        await dp.step();
        opt.zeroGrad();
      }
      assert.ok(maxParamDiff(dp.replicas[0].parameters(), single.parameters()) < 1e-5);
    });

    test(`${devices.join(',')}: BatchNorm running statistics stay equal on every replica`, async () => {
      const dp = await fl.parallel.DataParallel.create(mlp(true), { devices, groups: await localGroups(devices) });
      const opt = dp.optimizer(fl.optim.SGD, { lr: 0.05 });
      for (const [x, y] of batches(3, 16)) {
        F.crossEntropy(dp.forward(x), y.to(dp.outputDevice)).backward();
        await dp.step();
        opt.zeroGrad();
      }
      const first = dp.replicas[0].buffers().map(values);
      assert.ok(first.length >= 2);
      for (const r of dp.replicas.slice(1)) assert.equal(r.buffers().map(values), first);
    });
  }
}

test("the examples' CNN (convolutions, pooling) on 2 replicas takes the same 2 Adam steps as one device", async () => {
  const devices = deviceSets(2, 'DataParallel CNN')[0];
  fl.manualSeed(4);
  const x = fl.randn([8, 1, 28, 28]);
  const y = fl.randint(0, 10, [8]);
  fl.manualSeed(0);
  const single = cnn();
  fl.manualSeed(0);
  const dp = await fl.parallel.DataParallel.create(cnn(), { devices, groups: await localGroups(devices), bucketCapMB: 0.25 });
  const ref = new fl.optim.Adam(single.parameters(), { lr: 1e-3 });
  const opt = dp.optimizer(fl.optim.Adam, { lr: 1e-3 });
  for (let i = 0; i < 2; i++) {
    F.crossEntropy(single.forward(x), y).backward();
    ref.step();
    ref.zeroGrad();
    F.crossEntropy(dp.forward(x), y.to(dp.outputDevice)).backward();
    await dp.step();
    opt.zeroGrad();
  }
  assert.ok(maxParamDiff(dp.replicas[1].parameters(), single.parameters()) < 1e-5);
});

test('bad options and inputs are ERR_ARG / ERR_SHAPE naming the problem', async () => {
  const code = async (fn: () => Promise<unknown> | unknown) => {
    try {
      await fn();
    } catch (e) {
      return (e as { code?: string }).code;
    }
    return 'no error';
  };
  assert.is(await code(() => fl.parallel.DataParallel.create(mlp(), { devices: [] })), 'ERR_ARG');
  assert.is(await code(() => fl.parallel.DataParallel.create(mlp(), { devices: ['cpu'], speed: 1 } as never)), 'ERR_ARG');
  assert.is(await code(() => fl.parallel.DataParallel.create(mlp(), { devices: ['tpu:0'] })), 'ERR_DEVICE');
  const dp = await fl.parallel.DataParallel.create(mlp(), { devices: ['cpu:0', 'cpu:1'] }); // its own local groups
  assert.is(await code(() => dp.forward(fl.randn([1, 8]))), 'ERR_SHAPE');
  assert.is(await code(() => dp.step()), 'ERR_ARG');
});

test.run();
