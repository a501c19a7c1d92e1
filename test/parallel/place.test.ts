/** placeModule: an encoder and a head on different devices train as on one device. */
import { deviceSets, maxParamDiff } from './devices';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

const { nn } = fl;
const F = fl.nn.functional;

class Net extends nn.Module {
  encoder = new nn.Sequential(new nn.Linear(6, 12), new nn.ReLU());
  middle = new nn.Linear(12, 12);
  head = new nn.Linear(12, 3);
  forward(x: fl.Tensor): fl.Tensor {
    return this.head.forward(this.middle.forward(this.encoder.forward(x)).relu());
  }
}

function net(): Net {
  fl.manualSeed(11);
  return new Net();
}

for (const n of [2, 4]) {
  for (const devices of deviceSets(n, `placeModule x${n}`)) {
    test(`${devices.join(',')}: 10 Adam steps match one device (one optimizer over parameters on several devices); parameters sit where placed`, () => {
      fl.manualSeed(2);
      const data = Array.from({ length: 10 }, () => [fl.randn([10, 6]), fl.randint(0, 3, [10])] as const);
      const single = net();
      const model = fl.parallel.placeModule(net(), { encoder: devices[0], middle: devices[1 % n], head: devices[n - 1] });
      for (const m of [single, model]) {
        const opt = new fl.optim.Adam(m.parameters(), { lr: 0.01 });
        for (const [x, y] of data) {
          const out = m.forward(x);
          F.crossEntropy(out, y.to(out.device)).backward();
          opt.step();
          opt.zeroGrad();
        }
      }
      assert.ok(maxParamDiff(model.parameters(), single.parameters()) < 1e-5);
      assert.ok(model.encoder.parameters().every((p) => fl.sameDevice(p.device, devices[0])));
      assert.ok(model.head.parameters().every((p) => fl.sameDevice(p.device, devices[n - 1])));
      assert.is(fl.parallel.placement(model.middle), devices[1 % n]);
    });
  }
}

test('unknown sub-modules and uncovered parameters are ERR_ARG naming them', () => {
  assert.throws(() => fl.parallel.placeModule(net(), { decoder: 'cpu' }), /no sub-module named 'decoder'/);
  assert.throws(() => fl.parallel.placeModule(net(), { encoder: 'cpu' }), /middle.weight/);
  const m = fl.parallel.placeModule(net(), { '': 'cpu', head: 'cpu' });
  assert.is(m.forward(fl.randn([2, 6])).shape[1], 3);
});

test.run();
