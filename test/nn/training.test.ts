import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

const { nn } = fl;

function tinyCnn(): fl.nn.Sequential {
  return new nn.Sequential(
    new nn.Conv2d(1, 4, 3, { padding: 1 }),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Linear(4 * 4 * 4, 3),
  );
}

test('a small CNN overfits a fixed batch with Adam (loss falls by 10x)', () => {
  fl.manualSeed(11);
  const model = tinyCnn();
  const x = fl.randn([12, 1, 8, 8]);
  const y = fl.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2], { dtype: 'i64' });
  const opt = new fl.optim.Adam(model.parameters(), { lr: 0.01 });
  const losses: number[] = [];
  for (let i = 0; i < 150; i++) {
    losses.push(
      fl.tidy(() => {
        const loss = nn.functional.crossEntropy(model.forward(x), y);
        opt.zeroGrad();
        loss.backward();
        opt.step();
        return loss.itemSync();
      }),
    );
  }
  assert.ok(losses[149] < losses[0] / 10, `loss ${losses[0]} -> ${losses[149]}`);
});

test('training steps inside tidy leave no tensors behind', () => {
  fl.manualSeed(12);
  const model = tinyCnn();
  const x = fl.randn([4, 1, 8, 8]);
  const y = fl.tensor([0, 1, 2, 0], { dtype: 'i64' });
  const opt = new fl.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
  const step = () =>
    fl.tidy(() => {
      const loss = nn.functional.crossEntropy(model.forward(x), y);
      opt.zeroGrad();
      loss.backward();
      opt.step();
    });
  step();
  step();
  fl.syncSync();
  const before = fl.memory().cpu.tensors;
  for (let i = 0; i < 5; i++) step();
  fl.syncSync();
  assert.is(fl.memory().cpu.tensors, before);
});

test.run();
