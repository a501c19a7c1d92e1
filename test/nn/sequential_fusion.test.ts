import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { values } from '../helpers/values';

const { nn } = fl;

/** The same layers called one by one, as Sequential did before it fused Linear + ReLU. */
function unfused(mods: fl.nn.Module[], x: fl.Tensor): fl.Tensor {
  return mods.reduce((h, m) => (m as unknown as { forward(t: fl.Tensor): fl.Tensor }).forward(h), x);
}

function gradsOf(model: fl.nn.Module, run: () => fl.Tensor): { y: number[]; grads: number[][] } {
  for (const p of model.parameters()) p.grad = null;
  const y = run();
  y.square().sum().backward();
  return { y: values(y), grads: model.parameters().map((p) => values(p.grad as fl.Tensor)) };
}

test('Sequential: Linear then ReLU gives the same values and gradients, bit for bit, as calling them one by one', () => {
  for (const dtype of ['f32', 'f64', 'bf16'] as const) {
    fl.manualSeed(3);
    const mods = [new nn.Linear(6, 5), new nn.ReLU(), new nn.Linear(5, 4, { bias: false }), new nn.ReLU(), new nn.Linear(4, 3)];
    const seq = new nn.Sequential(...mods).to(dtype);
    // NaN, and an input whose pre-activations are exactly 0 in places (relu's derivative there is 0).
    const x = fl.randn([7, 6]).to(dtype);
    const data = values(x);
    data[3] = Number.NaN;
    const xs = fl.tensor(data, { dtype }).reshape([7, 6]);
    fl.tidy(() => {
      const fused = gradsOf(seq, () => seq.forward(xs));
      const plain = gradsOf(seq, () => unfused(mods, xs));
      assert.equal(fused.y, plain.y, `${dtype} values`);
      assert.equal(fused.grads, plain.grads, `${dtype} gradients`);
      const zeros = fl.zeros([2, 6], { dtype });
      assert.equal(gradsOf(seq, () => seq.forward(zeros)).grads, gradsOf(seq, () => unfused(mods, zeros)).grads, `${dtype} at zero`);
    });
  }
  // Under autocast too.
  fl.manualSeed(4);
  const mods = [new nn.Linear(8, 8), new nn.ReLU(), new nn.Linear(8, 2)];
  const seq = new nn.Sequential(...mods);
  const x = fl.randn([5, 8]);
  fl.tidy(() => {
    const ac = (f: () => fl.Tensor) => () => fl.autocast({ device: 'cpu', dtype: 'bf16' }, f);
    const fused = gradsOf(
      seq,
      ac(() => seq.forward(x)),
    );
    const plain = gradsOf(
      seq,
      ac(() => unfused(mods, x)),
    );
    assert.equal(fused, plain, 'autocast bf16');
  });
});

test('Sequential: a fused Linear + ReLU keeps one tensor for backward, as PyTorch does', async () => {
  fl.manualSeed(0);
  const seq = new nn.Sequential(new nn.Linear(64, 64), new nn.ReLU(), new nn.Linear(64, 64), new nn.ReLU());
  const x = fl.randn([32, 64]);
  const outBytes = 32 * 64 * 4;
  await fl.sync();
  const before = fl.memory().cpu.bytes;
  fl.tidy(() => {
    seq.forward(x);
    fl.syncSync(); // storages are allocated when their kernels run
    // One [32, 64] f32 tensor per Linear + ReLU pair (unfused: the pre-activation too).
    assert.is(fl.memory().cpu.bytes - before, 2 * outBytes);
  });
});

test('Sequential fuses only the library Linear and ReLU: a subclass or a replaced forward runs as written', () => {
  fl.manualSeed(1);
  class Doubling extends nn.Linear {
    override forward(x: fl.Tensor): fl.Tensor {
      return super.forward(x).mul(2);
    }
  }
  const x = fl.randn([3, 4]);
  const sub = new Doubling(4, 4);
  const relu = new nn.ReLU();
  assert.equal(values(new nn.Sequential(sub, relu).forward(x)), values(relu.forward(sub.forward(x))), 'subclass of Linear');

  const lin = new nn.Linear(4, 4);
  const leaky = new nn.ReLU();
  leaky.forward = (t: fl.Tensor) => fl.nn.functional.leakyRelu(t, 0.5);
  assert.equal(
    values(new nn.Sequential(lin, leaky).forward(x)),
    values(fl.nn.functional.leakyRelu(lin.forward(x), 0.5)),
    'replaced forward',
  );
  assert.ok(
    values(new nn.Sequential(lin, leaky).forward(x)).some((v) => v < 0),
    'the replaced forward ran (negative values survive)',
  );
});

test('checkpointSequential fuses Linear + ReLU inside its segments: same gradients as Sequential', () => {
  fl.manualSeed(2);
  const seq = new nn.Sequential(new nn.Linear(6, 6), new nn.ReLU(), new nn.Linear(6, 6), new nn.ReLU(), new nn.Linear(6, 1));
  const x = fl.randn([4, 6]);
  fl.tidy(() => {
    const plain = gradsOf(seq, () => seq.forward(x));
    const ck = gradsOf(seq, () => fl.utils.checkpointSequential(seq, 2, x));
    assert.equal(ck, plain);
  });
});

test.run();
