/** FLOP counts of a step: 2·M·N·K per Linear and convolution forward, ×3 for forward and backward. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { expectError } from '../helpers/reference';

const { nn } = fl;

test('matmul and conv2d arithmetic', () => {
  assert.is(fl.utils.matmulFlops(64, 10, 784), 2 * 64 * 10 * 784);
  assert.is(fl.utils.conv2dFlops(64 * 32 * 26 * 26, 1, [3, 3]), 2 * 64 * 32 * 26 * 26 * 9);
});

test('an MLP: one product per Linear; the step is three forwards', () => {
  const model = new nn.Sequential(new nn.Flatten(), new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10));
  const x = fl.zeros([100, 1, 28, 28]);
  const before = fl.memory().cpu.tensors;
  const fwd = 2 * 100 * 784 * 128 + 2 * 100 * 128 * 10;
  assert.is(fl.utils.forwardFlops(model, x), fwd);
  assert.is(fl.utils.stepFlops(model, x), 3 * fwd);
  assert.is(fl.memory().cpu.tensors, before, 'the counting pass frees its tensors');
  assert.not.ok(Object.hasOwn(model.at(1), 'forward'), 'forward restored');
});

test('a CNN: conv output × (in channels / groups × kernel), pooling and activations not counted', () => {
  const model = new nn.Sequential(
    new nn.Conv2d(1, 32, 3),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Conv2d(32, 64, 3, { groups: 2, padding: 1 }),
    new nn.Flatten(),
    new nn.Linear(64 * 13 * 13, 10),
  );
  const b = 4;
  const fwd = 2 * b * 32 * 26 * 26 * 1 * 9 + 2 * b * 64 * 13 * 13 * 16 * 9 + 2 * b * 64 * 13 * 13 * 10;
  assert.is(fl.utils.forwardFlops(model, fl.zeros([b, 1, 28, 28])), fwd);
});

test('ConvTranspose2d counts input × (out channels / groups × kernel)', () => {
  const model = new nn.ConvTranspose2d(8, 4, 2, { stride: 2 });
  assert.is(fl.utils.forwardFlops(model, fl.zeros([2, 8, 5, 5])), 2 * 2 * 8 * 5 * 5 * 4 * 4);
});

test('a model without forward() is an ERR_ARG', () => {
  expectError(() => fl.utils.forwardFlops({} as never, fl.zeros([1])), TypeError, 'ERR_ARG');
});

test.run();
