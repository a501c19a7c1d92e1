import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, close, fixtureFile, load, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;
const fx = fixtureFile('first_hour').cases;

test('conv1d matches PyTorch forward and backward', () => {
  checkCase(fx.conv1d_basic, ({ x, w, b }) => F.conv1d(x, w, b));
});

test('conv1d with stride, padding, dilation and groups matches PyTorch', () => {
  const c = fx.conv1d_strided;
  checkCase(c, ({ x, w, b }) => F.conv1d(x, w, b, c.options));
});

test('convTranspose1d matches PyTorch (outputPadding and groups; dilation without bias)', () => {
  checkCase(fx.conv_transpose1d, ({ x, w, b }) => F.convTranspose1d(x, w, b, fx.conv_transpose1d.options));
  checkCase(fx.conv_transpose1d_dilated, ({ x, w }) => F.convTranspose1d(x, w, null, fx.conv_transpose1d_dilated.options));
});

test("Conv1d's padding modes match PyTorch's layer, with its state dict loaded", () => {
  for (const mode of ['reflect', 'replicate', 'circular'] as const) {
    const c = fx[`conv1d_${mode}`];
    const layer = new fl.nn.Conv1d(4, 3, 3, { ...c.options, dtype: 'f64' });
    layer.loadStateDict({ weight: load(c.inputs.w), bias: load(c.inputs.b) });
    const x = load(c.inputs.x, 'f64', true);
    const y = layer.forward(x);
    close(y, c.output, 1e-9, `${mode} output`);
    y.mul(load(c.gy)).sum().backward();
    close(x.grad as fl.Tensor, c.grads.x, 1e-9, `${mode} grad x`);
    close(layer.weight.grad as fl.Tensor, c.grads.w, 1e-9, `${mode} grad weight`);
    close((layer.bias as fl.Tensor).grad as fl.Tensor, c.grads.b, 1e-9, `${mode} grad bias`);
  }
});

test('conv1d in f32 agrees with the f64 golden values', () => {
  const c = fx.conv1d_strided;
  const y = F.conv1d(load(c.inputs.x, 'f32'), load(c.inputs.w, 'f32'), load(c.inputs.b, 'f32'), c.options);
  close(y, c.output, 1e-4);
});

test('conv1d and convTranspose1d gradients pass a numerical check in f64', () => {
  fl.manualSeed(3);
  const w = fl.randn([2, 3, 3], { dtype: 'f64' });
  const r = fl.randn([2, 2, 3], { dtype: 'f64' });
  numericGradCheck((x) => F.conv1d(x, w, null, { stride: 2, padding: 1 }).mul(r).sum(), fl.randn([2, 3, 6], { dtype: 'f64' }));
  const x = fl.randn([2, 3, 6], { dtype: 'f64' });
  numericGradCheck((ww) => F.conv1d(x, ww, null, { stride: 2, padding: 1 }).mul(r).sum(), w);
  const wt = fl.randn([4, 1, 2], { dtype: 'f64' });
  const rt = fl.randn([1, 2, 9], { dtype: 'f64' });
  const xt = fl.randn([1, 4, 3], { dtype: 'f64' });
  const o = { stride: 3, outputPadding: 1, groups: 2 };
  numericGradCheck((xx) => F.convTranspose1d(xx, wt, null, o).mul(rt).sum(), xt);
  numericGradCheck((ww) => F.convTranspose1d(xt, ww, null, o).mul(rt).sum(), wt);
});

test("Conv1d and ConvTranspose1d: PyTorch's parameter names, shapes, init bounds and repr", () => {
  fl.manualSeed(0);
  const conv = new fl.nn.Conv1d(4, 6, 5, { groups: 2, padding: 2 });
  assert.equal(Object.keys(conv.stateDict()), ['weight', 'bias']);
  assert.equal([...conv.weight.shape], [6, 2, 5]);
  assert.equal([...(conv.bias as fl.Tensor).shape], [6]);
  // kaiming_uniform(a=√5) gives bound 1/√fan_in; fan_in = in/groups · k = 10.
  const bound = 1 / Math.sqrt(10);
  assert.ok(Math.max(...Array.from(conv.weight.abs().dataSync() as Float32Array)) <= bound);
  assert.equal([...conv.forward(fl.randn([2, 4, 9])).shape], [2, 6, 9]);
  assert.is(conv.toString(), 'Conv1d(4, 6, kernel_size=(5,), stride=(1,), padding=(2,), groups=2)');
  const t = new fl.nn.ConvTranspose1d(4, 6, 3, { stride: 2, outputPadding: 1, groups: 2, bias: false });
  assert.equal([...t.weight.shape], [4, 3, 3]);
  assert.is(t.bias, null);
  assert.equal([...t.forward(fl.randn([1, 4, 5])).shape], [1, 6, 12]);
  assert.is(t.toString(), 'ConvTranspose1d(4, 6, kernel_size=(3,), stride=(2,), output_padding=(1,), groups=2, bias=False)');
  assert.is(
    new fl.nn.Conv1d(2, 2, [3], { paddingMode: 'reflect', padding: 1 }).toString(),
    'Conv1d(2, 2, kernel_size=(3,), stride=(1,), padding=(1,), padding_mode=reflect)',
  );
});

test('conv1d: coded errors naming the op and shapes', () => {
  const x = fl.randn([2, 4, 9]);
  throwsCode(() => F.conv1d(fl.randn([4, 9]), fl.randn([3, 4, 3])), 'ERR_SHAPE');
  throwsCode(() => F.conv1d(x, fl.randn([3, 4, 3, 1])), 'ERR_SHAPE');
  throwsCode(() => F.conv1d(x, fl.randn([3, 5, 3])), 'ERR_SHAPE');
  throwsCode(() => F.conv1d(x, fl.randn([3, 4, 12])), 'ERR_SHAPE');
  throwsCode(() => F.conv1d(x, fl.randn([3, 4, 3]), null, { padding: 'same' as never }), 'ERR_ARG');
  throwsCode(() => F.conv1d(x, fl.randn([3, 4, 3]), null, { strides: 2 } as never), 'ERR_ARG');
  throwsCode(() => F.conv1d(x, fl.randn([3, 4, 3]), null, { stride: 0 }), 'ERR_RANGE');
  throwsCode(() => F.conv1d(fl.tensor([[[1, 2, 3]]]).to('i64'), fl.randn([1, 1, 1])), 'ERR_DTYPE');
  throwsCode(() => F.convTranspose1d(x, fl.randn([4, 2, 3]), null, { outputPadding: 1 }), 'ERR_RANGE');
  throwsCode(() => F.convTranspose1d(x, fl.randn([3, 2, 3])), 'ERR_SHAPE');
  throwsCode(() => F.conv1d(x, fl.randn([3, 4, 3]), fl.randn([4])), 'ERR_SHAPE');
  throwsCode(() => F.convTranspose1d(x, fl.randn([4, 3, 3]), fl.randn([3]), { groups: 2 }), 'ERR_SHAPE');
  throwsCode(() => new fl.nn.Conv1d(4, 6, 3, { groups: 4 }), 'ERR_RANGE');
  throwsCode(() => new fl.nn.ConvTranspose1d(4, 6, 3, { paddingMode: 'reflect' }), 'ERR_ARG');
  try {
    F.conv1d(x, fl.randn([3, 5, 3]));
  } catch (e) {
    assert.match((e as Error).message, /conv1d.*\[2,4,9\].*\[3,5,3\]/);
  }
});

test.run();
