/** replicate, scatter and device names: what the single-process strategies share. */
import './devices';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { replicate, scatter } from '../../lib/parallel/devices';

const { nn } = fl;

test('replicate copies parameters and buffers into new objects, shares parameter-free layers, keeps tied weights tied', () => {
  fl.manualSeed(1);
  const model = new nn.Sequential(new nn.Conv2d(1, 2, 3), new nn.BatchNorm2d(2), new nn.ReLU(), new nn.MaxPool2d(2));
  const copy = replicate(model, 'cpu');
  assert.is.not(copy, model);
  assert.ok(copy instanceof nn.Sequential);
  model.parameters().forEach((p, i) => {
    const q = copy.parameters()[i];
    assert.is.not(q, p);
    assert.equal(Array.from(q.dataSync() as Float32Array), Array.from(p.dataSync() as Float32Array));
  });
  assert.is.not(copy.buffers()[0], model.buffers()[0]);
  assert.is(copy.at(3), model.at(3)); // MaxPool2d: settings only, shared
  const x = fl.randn([2, 1, 8, 8]);
  assert.equal(Array.from(copy.forward(x).dataSync() as Float32Array), Array.from(model.forward(x).dataSync() as Float32Array));
  // Updating the copy leaves the original alone.
  fl.noGrad(() => copy.parameters()[0].copy_(fl.zerosLike(copy.parameters()[0])));
  assert.ok((model.parameters()[0].abs().sum().itemSync() as number) > 0);

  class Tied extends nn.Module {
    a = new nn.Linear(3, 3);
    b = this.a;
    forward(x: fl.Tensor) {
      return this.b.forward(this.a.forward(x));
    }
  }
  const tied = replicate(new Tied(), 'cpu');
  assert.is(tied.a, tied.b);
  assert.is(tied.parameters().length, 2);
});

test('scatter splits every tensor along dim 0 as PyTorch (⌈B/n⌉ rows each) and passes other values through', () => {
  const x = fl.arange(10).reshape([5, 2]);
  const parts = scatter('t', [x, 7], ['cpu', 'cpu']);
  assert.equal(
    parts.map((p) => (p[0] as fl.Tensor).shape[0]),
    [3, 2],
  );
  assert.is(parts[1][1], 7);
  assert.throws(() => scatter('t', [x, fl.zeros([4])], ['cpu', 'cpu']), /same batch size/);
  assert.throws(() => scatter('t', [fl.zeros([1, 2])], ['cpu', 'cpu']), /cannot be split/);
});

test.run();
