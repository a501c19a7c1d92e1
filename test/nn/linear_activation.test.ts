/** linear with a fused bias + activation: forward and gradients against the unfused f64 path, gradcheck, errors. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import type { Tensor } from '../../lib/index';
import { native } from '../../lib/native';
import { gradcheck, rnd } from '../helpers/gradcheck';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';

type Act = fl.nn.functional.LinearActivation;
const ACTS: Act[] = ['none', 'relu', 'gelu', 'gelu_tanh', 'silu', 'tanh', 'sigmoid'];
const F = fl.nn.functional;

fl.manualSeed(2024);

// The same function built from separate ops (matmul, add, activation), each tested on its own.
function unfused(x: Tensor, w: Tensor, b: Tensor, act: Act): Tensor {
  const y = x.matmul(w.T).add(b);
  switch (act) {
    case 'none':
      return y;
    case 'gelu_tanh':
      return y.gelu('tanh');
    default:
      return y[act]();
  }
}

// Plain-JS values of the activations that Math covers, for a reference independent of the library.
const JS: Partial<Record<Act, (v: number) => number>> = {
  none: (v) => v,
  relu: (v) => Math.max(v, 0),
  tanh: Math.tanh,
  sigmoid: (v) => 1 / (1 + Math.exp(-v)),
  silu: (v) => v / (1 + Math.exp(-v)),
  gelu_tanh: (v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3))),
};

for (const act of ACTS) {
  test(`linear(${act}) forward matches the unfused f64 path, in f64 and f32`, () => {
    const x = rnd([5, 7]),
      w = rnd([6, 7]),
      b = rnd([6]);
    const want = values(unfused(x, w, b, act));
    close(values(F.linear(x, w, b, { activation: act })), want, 1e-12, 1e-12, `${act} f64`);
    close(values(F.linear(x.to('f32'), w.to('f32'), b.to('f32'), { activation: act })), want, 1e-5, 1e-5, `${act} f32`);
    const js = JS[act];
    if (js) {
      const pre = values(x.matmul(w.T).add(b));
      close(values(F.linear(x, w, b, { activation: act })), pre.map(js), 1e-12, 1e-12, `${act} vs JS`);
    }
  });

  test(`linear(${act}) gradients of input, weight and bias match the unfused f64 path`, () => {
    const grads = (fused: boolean) => {
      fl.manualSeed(77);
      const x = rnd([4, 3, 5]).requiresGrad_(),
        w = rnd([6, 5]).requiresGrad_(),
        b = rnd([6]).requiresGrad_();
      const r = rnd([4, 3, 6]);
      const y = fused ? F.linear(x, w, b, { activation: act }) : unfused(x.reshape([12, 5]), w, b, act).reshape([4, 3, 6]);
      y.mul(r).sum().backward();
      return [x, w, b].map((t) => values(t.grad!));
    };
    const got = grads(true),
      want = grads(false);
    ['input', 'weight', 'bias'].forEach((name, i) => close(got[i], want[i], 1e-10, 1e-12, `${act} d${name}`));
  });

  test(`linear(${act}) passes gradcheck in f64`, () => {
    const err = gradcheck(([x, w, b]) => F.linear(x, w, b, { activation: act }), [rnd([3, 4]), rnd([5, 4]), rnd([5])]);
    assert.is(err, null, err ?? '');
  });
}

test('without a bias the activation still applies', () => {
  const x = rnd([3, 4]),
    w = rnd([2, 4]);
  close(values(F.linear(x, w, null, { activation: 'tanh' })), values(x.matmul(w.T).tanh()), 1e-12, 1e-12);
  const err = gradcheck(([xx, ww]) => F.linear(xx, ww, null, { activation: 'silu' }), [x, w]);
  assert.is(err, null, err ?? '');
});

test('half dtypes run the fused kernel on the CPU', () => {
  const x = rnd([4, 9]),
    w = rnd([3, 9]),
    b = rnd([3]);
  const want = values(unfused(x, w, b, 'gelu'));
  for (const dt of ['bf16', 'f16'] as const) {
    const y = F.linear(x.to(dt), w.to(dt), b.to(dt), { activation: 'gelu' });
    assert.is(y.dtype, dt);
    close(values(y.to('f32')), want, 5e-2, 5e-2, dt);
  }
});

test('empty batches give empty outputs', () => {
  const y = F.linear(fl.zeros([0, 4]), fl.ones([3, 4]), fl.ones([3]), { activation: 'relu' });
  assert.equal([...y.shape], [0, 3]);
});

test('nn.Linear records the fused bias add', () => {
  const lin = new fl.nn.Linear(4, 3);
  const y = lin.forward(fl.randn([2, 4]));
  assert.is(y.gradFn?.name, 'linear');
  y.sum().backward();
  close(values(lin.bias!.grad!), [2, 2, 2], 0, 0, 'bias grad');
});

test('bad arguments are refused with codes that name the shapes', () => {
  const x = fl.randn([2, 4]),
    w = fl.randn([3, 4]);
  expectError(() => F.linear(x, w, fl.randn([4])), RangeError, 'ERR_SHAPE', /\[4\].*\[3,4\]/);
  expectError(() => F.linear(x, w, fl.randn([3, 1])), RangeError, 'ERR_SHAPE', /\[3,1\]/);
  expectError(() => F.linear(x, fl.randn([3, 5]), fl.randn([3])), RangeError, 'ERR_SHAPE', /\[2,4\].*\[3,5\]/);
  expectError(() => F.linear(x, w, fl.randn([3], { dtype: 'f64' })), TypeError, 'ERR_DTYPE');
  expectError(() => F.linear(x, w, fl.randn([3]), { activation: 'softplus' as Act }), TypeError, 'ERR_ARG', /softplus/);
  expectError(() => F.linear(x, w, 3 as unknown as Tensor), TypeError, 'ERR_ARG');
});

test('the native kernel checks its arguments again', () => {
  const x = fl.randn([2, 4]);
  expectError(() => native.biasAct(x.handle, fl.randn([5]).handle, 'relu'), RangeError, 'ERR_SHAPE', /\[5\].*\[2,4\]/);
  expectError(() => native.biasAct(fl.randn([8]).handle, fl.randn([8]).handle, 'relu'), RangeError, 'ERR_SHAPE', /\[8\]/);
  expectError(() => native.biasAct(x.handle, fl.randn([4]).handle, 'swish' as 'relu'), TypeError, 'ERR_ARG');
  expectError(() => native.biasAct(x.handle, fl.randn([4], { dtype: 'f64' }).handle, 'none'), TypeError, 'ERR_DTYPE');
  expectError(
    () => native.biasAct(fl.ones([2, 4], { dtype: 'i32' }).handle, fl.ones([4], { dtype: 'i32' }).handle, 'none'),
    TypeError,
    'ERR_DTYPE',
  );
  expectError(() => native.biasActBackward(x.handle, fl.randn([2, 3]).handle, null, 'gelu'), RangeError, 'ERR_SHAPE', /\[2,3\].*\[2,4\]/);
  // Only a bf16/f16 input may take an f32 bias (rounded in the kernel as a cast would round it).
  const xb = x.to('bf16');
  expectError(() => native.biasAct(xb.handle, fl.randn([4], { dtype: 'f64' }).handle, 'none'), TypeError, 'ERR_DTYPE');
  expectError(() => native.biasAct(x.to('f64').handle, fl.randn([4]).handle, 'none'), TypeError, 'ERR_DTYPE');
  const b = fl.randn([4]);
  const fused = new fl.Tensor(native.biasAct(xb.handle, b.handle, 'relu'));
  assert.equal(values(fused.to('f32')), values(xb.add(b.to('bf16')).relu().to('f32')));
});

test('linear with a bias keeps one [rows, out] tensor for none and relu (the bias add writes over the product), two for the smooth activations', async () => {
  const x = fl.randn([64, 32]).requiresGrad_(),
    w = fl.randn([48, 32]).requiresGrad_(),
    b = fl.randn([48]).requiresGrad_();
  const outBytes = 64 * 48 * 4;
  for (const [act, tensors] of [
    ['none', 1],
    ['relu', 1],
    ['gelu', 2],
    ['tanh', 2],
  ] as const) {
    for (const grad of [true, false]) {
      await fl.sync();
      const before = fl.memory().cpu.bytes;
      let held = 0;
      fl.tidy(() => {
        const y = grad ? F.linear(x, w, b, { activation: act }) : fl.noGrad(() => F.linear(x, w, b, { activation: act }));
        fl.syncSync(); // storages are allocated when their kernels run
        held = fl.memory().cpu.bytes - before;
        // Without grad nothing keeps the product: only the output stays.
        assert.is(held, (grad ? tensors : 1) * outBytes, `${act} grad ${grad}: ${held} bytes held`);
        if (grad) {
          y.square().sum().backward();
          const again = x.matmul(w.T).add(b);
          const ref = act === 'none' ? again : act === 'gelu' ? again.gelu() : again[act]();
          close(values(y), values(ref), 1e-5, 1e-5, `${act} values`);
        }
      });
      for (const t of [x, w, b]) t.grad = null;
    }
  }
});

test.run();
