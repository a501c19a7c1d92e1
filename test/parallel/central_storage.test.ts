/** CentralStorage: parameters and optimizer state on the CPU, compute on 2 and 4 devices. */
import { deviceSets, maxParamDiff } from './devices';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

const { nn } = fl;
const F = fl.nn.functional;

function mlp(): fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor } {
  fl.manualSeed(5);
  return new nn.Sequential(new nn.Linear(8, 16), new nn.Tanh(), new nn.Linear(16, 4));
}

function batches(steps: number): [fl.Tensor, fl.Tensor][] {
  fl.manualSeed(9);
  return Array.from({ length: steps }, () => [fl.randn([12, 8]), fl.randint(0, 4, [12])]);
}

for (const n of [2, 4]) {
  for (const devices of deviceSets(n, `CentralStorage x${n}`)) {
    test(`${devices.join(',')}: 10 Adam steps match one device; parameters and state stay on storage`, async () => {
      const data = batches(10);
      const single = mlp();
      const ref = new fl.optim.Adam(single.parameters(), { lr: 0.01 });
      for (const [x, y] of data) {
        F.crossEntropy(single.forward(x), y).backward();
        ref.step();
        ref.zeroGrad();
      }
      const cs = new fl.parallel.CentralStorage(mlp(), { devices });
      const opt = cs.optimizer(fl.optim.Adam, { lr: 0.01 });
      for (const [x, y] of data) {
        F.crossEntropy(cs.forward(x), y.to(cs.outputDevice)).backward();
        await cs.step();
        opt.zeroGrad();
      }
      assert.ok(maxParamDiff(cs.parameters(), single.parameters()) < 1e-5);
      assert.ok(cs.parameters().every((p) => fl.sameDevice(p.device, cs.storage)));
      for (const st of opt.state.values())
        for (const v of Object.values(st)) if (v instanceof fl.Tensor) assert.ok(v.device === cs.module.parameters()[0].device);
    });
  }
}

test('unknown options and bad storage devices are refused', () => {
  assert.throws(
    () => new fl.parallel.CentralStorage(mlp(), { devices: ['cpu'], store: 'cpu' } as never),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
  assert.throws(
    () => new fl.parallel.CentralStorage(mlp(), { devices: ['cpu'], storage: 'disk' }),
    (e: { code?: string }) => e.code === 'ERR_DEVICE',
  );
});

test.run();
