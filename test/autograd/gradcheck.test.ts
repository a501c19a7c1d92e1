/** Every differentiable op: analytic gradient vs central differences, in f64 on the CPU. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import type { Tensor } from '../../lib/index';
import { gradcheck, rnd } from '../helpers/gradcheck';

fl.manualSeed(1234);

type Case = [string, (xs: Tensor[]) => Tensor, () => Tensor[]];
const s23 = () => [rnd([2, 3])];
const pos = () => [rnd([2, 3], { positive: true })];
const pair = () => [rnd([2, 3]), rnd([2, 3])];
const bcast = () => [rnd([2, 3]), rnd([3])];

// Keep inputs away from kinks (relu at 0, abs at 0, clamp bounds) so differences are smooth.
const awayFromZero = () => [
  rnd([2, 3])
    .sign()
    .add(
      rnd([2, 3])
        .abs()
        .add(0.2)
        .mul(rnd([2, 3]).sign().abs()),
    ),
];

const cases: Case[] = [
  ['add', ([a, b]) => a.add(b), bcast],
  ['add alpha', ([a, b]) => a.add(b, 2.5), pair],
  ['sub', ([a, b]) => a.sub(b), bcast],
  ['mul', ([a, b]) => a.mul(b), bcast],
  ['div', ([a, b]) => a.div(b), () => [rnd([2, 3]), rnd([3], { positive: true })]],
  ['pow tensor', ([a, b]) => a.pow(b), () => [rnd([2, 3], { positive: true }), rnd([2, 3])]],
  ['pow scalar', ([a]) => a.pow(3), s23],
  ['maximum', ([a, b]) => a.maximum(b), pair],
  ['minimum', ([a, b]) => a.minimum(b), pair],
  ['neg', ([a]) => a.neg(), s23],
  ['exp', ([a]) => a.exp(), s23],
  ['log', ([a]) => a.log(), pos],
  ['sqrt', ([a]) => a.sqrt(), pos],
  ['rsqrt', ([a]) => a.rsqrt(), pos],
  ['abs', ([a]) => a.abs(), awayFromZero],
  ['square', ([a]) => a.square(), s23],
  ['tanh', ([a]) => a.tanh(), s23],
  ['sigmoid', ([a]) => a.sigmoid(), s23],
  ['relu', ([a]) => a.relu(), awayFromZero],
  ['gelu', ([a]) => a.gelu(), s23],
  ['gelu tanh', ([a]) => a.gelu('tanh'), s23],
  ['silu', ([a]) => a.silu(), s23],
  ['leakyRelu', ([a]) => fl.leakyRelu(a, 0.1), awayFromZero],
  [
    'clamp',
    ([a]) => a.clamp(-0.5, 0.5),
    () => [
      fl.tensor(
        [
          [-1.2, -0.3, 0.1],
          [0.4, 0.9, 2.0],
        ],
        { dtype: 'f64' },
      ),
    ],
  ],
  ['sin', ([a]) => fl.sin(a), s23],
  ['cos', ([a]) => fl.cos(a), s23],
  ['erf', ([a]) => fl.erf(a), s23],
  ['log1p', ([a]) => fl.log1p(a), pos],
  ['expm1', ([a]) => fl.expm1(a), s23],
  ['reciprocal', ([a]) => fl.reciprocal(a), pos],
  ['where', ([a, b]) => fl.where(a.gt(0), a, b), pair],
  ['maskedFill', ([a]) => a.maskedFill(a.gt(0.3), 2), s23],
  ['sum all', ([a]) => a.sum(), s23],
  ['sum dim keepdim', ([a]) => a.sum(1, true), s23],
  ['sum dims', ([a]) => a.sum([0, 2]), () => [rnd([2, 3, 4])]],
  ['mean', ([a]) => a.mean(0), s23],
  ['mean non-adjacent dims', ([a]) => a.mean([0, 2], true), () => [rnd([2, 3, 2])]],
  ['max dim', ([a]) => a.max(1).values, s23],
  ['max dims', ([a]) => a.max([1]), s23],
  ['min all', ([a]) => a.min(), s23],
  ['var', ([a]) => a.var(1), s23],
  ['var correction 0', ([a]) => a.var([0, 1], { correction: 0 }), s23],
  ['std', ([a]) => a.std(0, { keepdim: true }), s23],
  ['logsumexp', ([a]) => a.logsumexp(1), s23],
  ['softmax', ([a]) => a.softmax(-1), s23],
  ['softmax dim 0', ([a]) => a.softmax(0), () => [rnd([3, 2, 2])]],
  ['logSoftmax', ([a]) => a.logSoftmax(1), s23],
  ['matmul 2d', ([a, b]) => a.matmul(b), () => [rnd([2, 3]), rnd([3, 4])]],
  ['matmul batched broadcast', ([a, b]) => a.matmul(b), () => [rnd([2, 2, 3]), rnd([3, 2])]],
  ['matmul vec-mat', ([a, b]) => a.matmul(b), () => [rnd([3]), rnd([3, 2])]],
  ['matmul mat-vec', ([a, b]) => a.matmul(b), () => [rnd([2, 3]), rnd([3])]],
  ['matmul transposed operand', ([a, b]) => a.matmul(b.T), () => [rnd([2, 3]), rnd([4, 3])]],
  ['reshape', ([a]) => a.reshape(3, 2).mul(a.reshape(3, 2)), s23],
  ['flatten', ([a]) => a.flatten(1), () => [rnd([2, 2, 2])]],
  ['squeeze/unsqueeze', ([a]) => a.unsqueeze(1).squeeze(1).exp(), s23],
  ['expand', ([a]) => a.expand(2, 3), () => [rnd([1, 3])]],
  ['transpose', ([a]) => a.transpose(0, 1).exp(), s23],
  ['permute', ([a]) => a.permute(2, 0, 1).exp(), () => [rnd([2, 3, 2])]],
  ['narrow', ([a]) => a.narrow(1, 1, 2), s23],
  ['slice negative', ([a]) => a.slice(0, -1), () => [rnd([3, 2])]],
  ['cat', ([a, b]) => fl.cat([a, b], 1), pair],
  ['stack', ([a, b]) => fl.stack([a, b], 1), pair],
  ['split', ([a]) => a.split(2, 1)[1], () => [rnd([2, 4])]],
  ['chunk', ([a]) => a.chunk(2, 0)[0], () => [rnd([4, 2])]],
  ['indexSelect', ([a]) => a.indexSelect(0, fl.tensor([2, 0, 2], { dtype: 'i64' })), () => [rnd([3, 2])]],
  [
    'gather',
    ([a]) =>
      a.gather(
        1,
        fl.tensor(
          [
            [0, 0],
            [2, 1],
          ],
          { dtype: 'i64' },
        ),
      ),
    s23,
  ],
  [
    'scatterAdd',
    ([a, b]) =>
      a.scatterAdd(
        1,
        fl.tensor(
          [
            [0, 0],
            [2, 1],
          ],
          { dtype: 'i64' },
        ),
        b,
      ),
    () => [rnd([2, 3]), rnd([2, 2])],
  ],
  ['cast f32 roundtrip keeps graph', ([a]) => a.to('f32').to('f64').mul(2), s23],
  ['clone', ([a]) => a.clone().mul(a), s23],
  ['composite: mlp layer', ([x, w, b]) => x.matmul(w).add(b).tanh().sum(1), () => [rnd([4, 3]), rnd([3, 5]), rnd([5])]],
];

for (const [name, f, make] of cases) {
  test(`gradcheck ${name}`, () => {
    const inputs = make();
    const tol = name.includes('f32') ? { eps: 1e-2, atol: 1e-2, rtol: 1e-2 } : {};
    const mismatch = gradcheck(f, inputs, tol);
    assert.is(mismatch, null, `${name}: ${mismatch}`);
  });
}

test('gradient accumulates into .grad across backward calls', () => {
  const x = fl.tensor([1, 2, 3], { dtype: 'f64', requiresGrad: true });
  x.mul(2).sum().backward();
  x.mul(3).sum().backward();
  assert.equal(Array.from(x.grad!.dataSync(), Number), [5, 5, 5]);
});

test('backward with an explicit gradient', () => {
  const x = fl.tensor([1, 2], { dtype: 'f64', requiresGrad: true });
  x.mul(x).backward(fl.tensor([1, 10], { dtype: 'f64' }));
  assert.equal(Array.from(x.grad!.dataSync(), Number), [2, 40]);
});

test('noGrad records nothing; detach cuts the graph', () => {
  const x = fl.tensor([1, 2], { requiresGrad: true });
  const y = fl.noGrad(() => x.mul(2));
  assert.is(y.requiresGrad, false);
  assert.is(x.detach().mul(2).requiresGrad, false);
});

test('hook on a leaf fires once, when its gradient is final, before backward ends', () => {
  const w1 = fl.tensor([1, 2], { dtype: 'f64', requiresGrad: true });
  const w2 = fl.tensor([3, 4], { dtype: 'f64', requiresGrad: true });
  const events: string[] = [];
  w2.registerHook((g) => {
    events.push(`w2:${Array.from(g.dataSync(), Number).join(',')}`);
  });
  w1.registerHook((g) => {
    events.push(`w1:${Array.from(g.dataSync(), Number).join(',')}`);
  });
  // w2 is used twice (its grad is the sum of two contributions); w1 feeds the earlier layer.
  const h = w1.mul(2);
  const y = h.mul(w2).add(w2.mul(3)).sum();
  y.backward();
  assert.equal(events.length, 2);
  assert.ok(events.includes('w2:5,7'));
  assert.ok(events.includes('w1:6,8'));
});

test('hook can replace the gradient', () => {
  const x = fl.tensor([1, 2], { dtype: 'f64', requiresGrad: true });
  x.registerHook((g) => g.mul(10));
  x.sum().backward();
  assert.equal(Array.from(x.grad!.dataSync(), Number), [10, 10]);
});

test('backward on a non-scalar without gradient throws RangeError', () => {
  const x = fl.tensor([1, 2], { requiresGrad: true });
  assert.throws(
    () => x.mul(2).backward(),
    (e: Error) => e instanceof RangeError && /one-element outputs/.test(e.message),
  );
});

test.run();
