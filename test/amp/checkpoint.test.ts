import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';

const nn = fl.nn;

function bits(t: fl.Tensor): number[] {
  return Array.from(new Uint32Array((t.dataSync() as Float32Array).buffer.slice(0)));
}

function model(seed: number) {
  fl.manualSeed(seed);
  return new nn.Sequential(
    new nn.Linear(16, 32),
    new nn.ReLU(),
    new nn.Dropout(0.3),
    new nn.Linear(32, 32),
    new nn.GELU(),
    new nn.Dropout(0.2),
    new nn.Linear(32, 8),
    new nn.Tanh(),
    new nn.Linear(8, 4),
  );
}

/** Loss and every gradient (input's included), with `wrap` deciding how the model runs. */
function grads(wrap: (m: fl.nn.Sequential, x: fl.Tensor) => fl.Tensor) {
  const m = model(11);
  fl.manualSeed(99);
  const x = fl.randn([8, 16]).requiresGrad_();
  const loss = wrap(m, x).square().mean();
  loss.backward();
  return { loss: bits(loss), x: x.grad ? bits(x.grad) : null, ps: m.parameters().map((p) => bits(p.grad as fl.Tensor)) };
}

test('checkpoint: gradients bit-identical with and without, dropout inside', () => {
  const plain = grads((m, x) => m.forward(x) as fl.Tensor);
  const ckpt = grads((m, x) => fl.utils.checkpoint((h: unknown) => m.forward(h) as fl.Tensor, x));
  assert.equal(ckpt.loss, plain.loss, 'loss');
  assert.equal(ckpt.x, plain.x, 'input grad');
  ckpt.ps.forEach((g, i) => assert.equal(g, plain.ps[i], `param ${i} grad`));
});

test('checkpointSequential: bit-identical gradients, including parameters of a segment whose input needs no grad', () => {
  const plain = grads((m, x) => m.forward(x.detach()) as fl.Tensor);
  const ckpt = grads((m, x) => fl.utils.checkpointSequential(m, 3, x.detach()));
  assert.equal(ckpt.loss, plain.loss, 'loss');
  ckpt.ps.forEach((g, i) => assert.equal(g, plain.ps[i], `param ${i} grad`));
});

test('checkpoint of a Module; the random state after backward is the one before it', () => {
  const plain = grads((m, x) => m.forward(x) as fl.Tensor);
  const ckpt = grads((m, x) => fl.utils.checkpoint(m, x));
  ckpt.ps.forEach((g, i) => assert.equal(g, plain.ps[i], `param ${i} grad`));
  const m = model(1);
  const x = fl.randn([2, 16]).requiresGrad_();
  const y = fl.utils.checkpoint(m, x).sum();
  const before = fl.getRngState();
  y.backward();
  assert.equal(fl.getRngState(), before);
});

test('checkpoint under autocast recomputes in the same dtypes', () => {
  const run = (ck: boolean) => {
    const m = model(4);
    fl.manualSeed(8);
    const x = fl.randn([8, 16]).requiresGrad_();
    const y = fl.autocast({ device: 'cpu', dtype: 'bf16' }, () => (ck ? fl.utils.checkpoint(m, x) : (m.forward(x) as fl.Tensor)));
    assert.is(y.dtype, 'bf16');
    y.to('f32').sum().backward();
    return m.parameters().map((p) => bits(p.grad as fl.Tensor));
  };
  const a = run(false),
    b = run(true);
  b.forEach((g, i) => assert.equal(g, a[i], `param ${i} grad`));
});

test('checkpoint saves memory: only the inputs are kept', () => {
  const m = new nn.Sequential(...Array.from({ length: 8 }, () => [new nn.Linear(256, 256), new nn.ReLU()]).flat());
  const x = fl.randn([512, 256]).requiresGrad_();
  const peak = (fn: () => fl.Tensor) => {
    // Frees are queued behind the kernels: sync before reading the counters.
    fl.syncSync();
    const before = fl.memory().cpu.bytes;
    const y = fn();
    fl.syncSync();
    const held = fl.memory().cpu.bytes - before;
    y.sum().backward();
    return held;
  };
  const plain = peak(() => m.forward(x) as fl.Tensor);
  const ck = peak(() => fl.utils.checkpoint(m, x));
  assert.ok(ck < plain / 4, `held after forward: ${ck} bytes with checkpoint, ${plain} without`);
});

test('checkpoint argument errors', () => {
  assert.throws(
    () => fl.utils.checkpoint(42 as never),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
  const x = fl.randn([2]).requiresGrad_();
  assert.throws(
    () => fl.utils.checkpoint(() => 3 as never, x),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
  assert.throws(
    () => fl.utils.checkpointSequential(model(1), 0, x),
    (e: { code?: string }) => e.code === 'ERR_RANGE',
  );
});

test.run();
