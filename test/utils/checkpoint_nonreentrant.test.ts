/**
 * fl.utils.checkpoint's non-reentrant default (lib/utils/checkpoint.ts), as PyTorch's
 * use_reentrant=False: parameters the function closes over get gradients even when no input
 * requires grad, bit for bit (f64) those of the same model run without checkpointing — nested
 * modules, nested checkpoints, several outputs, dropout (the RNG state preserved), closed-over
 * tensors with a history — and `{ useReentrant: true }` keeps the old behaviour and its warning.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { values } from '../helpers/values';

const nn = fl.nn;

/** The values of a gradient, null where there is none. */
function bits(t: fl.Tensor | null | undefined): number[] | null {
  return t ? values(t) : null;
}

class Block extends nn.Module {
  inner = new nn.Sequential(new nn.Linear(8, 16), new nn.GELU(), new nn.Dropout(0.25), new nn.Linear(16, 8));
  norm = new nn.LayerNorm([8]);
  forward(x: fl.Tensor): fl.Tensor {
    return this.norm.forward(x.add(this.inner.forward(x) as fl.Tensor)) as fl.Tensor;
  }
}

class Net extends nn.Module {
  blocks = new nn.ModuleList([new Block(), new Block(), new Block()]);
  head = new nn.Linear(8, 3);
  forward(x: fl.Tensor): fl.Tensor {
    for (const b of this.blocks) x = (b as Block).forward(x);
    return this.head.forward(x) as fl.Tensor;
  }
}

function net(seed: number): Net {
  fl.manualSeed(seed);
  return new Net().to('f64');
}

/** Loss and every parameter gradient of `run`, from the same seeds each time. */
function grads(run: (m: Net, x: fl.Tensor) => fl.Tensor, inputGrad = false) {
  const m = net(3);
  fl.manualSeed(17);
  const x = fl.randn([5, 8], { dtype: 'f64' });
  if (inputGrad) x.requiresGrad_();
  const loss = run(m, x);
  loss.backward();
  return {
    loss: bits(loss),
    x: bits(x.grad),
    params: [...m.namedParameters()].map(([k, p]) => [k, bits(p.grad)] as const),
    rng: fl.getRngState(),
  };
}

const blocks = (m: Net) => [...m.blocks.children()] as Block[];

const plain = (m: Net, x: fl.Tensor) => {
  let h = x;
  for (const b of blocks(m)) h = b.forward(h);
  return (m.head.forward(h) as fl.Tensor).square().mean();
};

test('closed-over parameters get gradients though no input requires grad, bit for bit (f64, dropout inside)', () => {
  const ref = grads(plain);
  const ck = grads((m, x) => {
    let h = x;
    // A closure over the block, not the Module: its parameters are found from the graph.
    for (const b of blocks(m)) h = fl.utils.checkpoint((y: fl.Tensor) => b.forward(y), h);
    return (m.head.forward(h) as fl.Tensor).square().mean();
  });
  assert.equal(ck.loss, ref.loss);
  for (const [i, [k, g]] of ref.params.entries()) {
    assert.ok(g, `${k} has a gradient without checkpointing`);
    assert.equal(ck.params[i], [k, g], k);
  }
  assert.equal(ck.rng, ref.rng, 'the random state after backward is the one without checkpointing');
});

test('an input that requires grad, a Module as fn, and nested checkpoints give the same gradients', () => {
  const ref = grads(plain, true);
  const ck = grads((m, x) => {
    const [b0, b1, b2] = blocks(m);
    // Nested: a checkpointed function that checkpoints a block itself.
    let h = fl.utils.checkpoint((y: fl.Tensor) => fl.utils.checkpoint(b1, b0.forward(y)), x);
    h = fl.utils.checkpoint(b2, h);
    return (m.head.forward(h) as fl.Tensor).square().mean();
  }, true);
  assert.equal(ck.loss, ref.loss);
  assert.equal(ck.x, ref.x);
  assert.equal(ck.params, ref.params);
});

test('a function of several outputs: one recompute, gradients of each output and of an unused one', () => {
  const twoHeads = (m: Net, x: fl.Tensor, ckpt: boolean) => {
    let calls = 0;
    const fn = (y: fl.Tensor): [fl.Tensor, fl.Tensor, fl.Tensor, number] => {
      calls++;
      const [b0, b1] = blocks(m);
      const h = b0.forward(y);
      return [b1.forward(h), h.tanh(), m.head.forward(h) as fl.Tensor, 7];
    };
    const [a, b, unused, n] = ckpt ? fl.utils.checkpoint(fn, x) : fn(x);
    assert.is(n, 7);
    assert.ok(unused.requiresGrad);
    const loss = (m.head.forward(a) as fl.Tensor).square().mean().add(b.mul(b).sum());
    return { loss, calls: () => calls };
  };
  const ref = grads((m, x) => twoHeads(m, x, false).loss);
  let calls = () => 0;
  const ck = grads((m, x) => {
    const r = twoHeads(m, x, true);
    calls = r.calls;
    return r.loss;
  });
  assert.is(calls(), 2, 'forward once, recomputed once');
  assert.equal(ck.loss, ref.loss);
  assert.equal(ck.params, ref.params);
});

test('a closed-over tensor with a history of its own: its gradient reaches that history once', () => {
  const run = (ckpt: boolean) => {
    fl.manualSeed(5);
    const w = fl.randn([4, 4], { dtype: 'f64' }).requiresGrad_();
    const v = fl.randn([4], { dtype: 'f64' }).requiresGrad_();
    const scaled = w.mul(2); // made outside fn, read inside it
    const fn = (x: fl.Tensor) => x.matmul(scaled).add(v).relu().matmul(w);
    const x = fl.randn([3, 4], { dtype: 'f64' });
    const y = ckpt ? fl.utils.checkpoint(fn, x) : fn(x);
    y.add(scaled.sum()).square().sum().backward();
    return [bits(w.grad), bits(v.grad)];
  };
  assert.equal(run(true), run(false));
});

test('a hook on a closed-over parameter sees its whole gradient once, from the outer backward', () => {
  fl.manualSeed(8);
  const lin = new nn.Linear(4, 4).to('f64');
  const seen: number[][] = [];
  lin.weight.registerHook((g) => {
    seen.push(Array.from(g.dataSync() as Float64Array));
  });
  const x = fl.randn([2, 4], { dtype: 'f64' });
  fl.utils
    .checkpoint((y: fl.Tensor) => (lin.forward(lin.forward(y) as fl.Tensor) as fl.Tensor).relu(), x)
    .sum()
    .backward();
  assert.is(seen.length, 1);
  assert.equal(seen[0], bits(lin.weight.grad));
});

test('an input returned unchanged, and no-grad mode', () => {
  const x = fl.randn([3], { dtype: 'f64' }).requiresGrad_();
  const [same, twice] = fl.utils.checkpoint((y: fl.Tensor) => [y, y.mul(2)], x);
  assert.is.not(same, x);
  same.add(twice).sum().backward();
  assert.equal(bits(x.grad), [3, 3, 3]);
  const off = fl.noGrad(() => fl.utils.checkpoint((y: fl.Tensor) => y.mul(3), x));
  assert.not.ok(off.requiresGrad);
});

test('useReentrant: true keeps the old behaviour: closed-over parameters need an input that requires grad', () => {
  fl.manualSeed(9);
  const lin = new nn.Linear(4, 2);
  const x = fl.randn([3, 4]);
  const warnings: string[] = [];
  const listen = (w: Error) => warnings.push(w.message);
  process.on('warning', listen);
  const y = fl.utils.checkpoint((t: fl.Tensor) => lin.forward(t) as fl.Tensor, x, { useReentrant: true });
  assert.not.ok(y.requiresGrad);
  assert.throws(
    () => y.sum().backward(),
    (e: { code?: string; message: string }) => e.code === 'ERR_AUTOGRAD' && /does not require grad/.test(e.message),
  );
  // The non-reentrant default on the same call trains the layer.
  fl.utils
    .checkpoint((t: fl.Tensor) => lin.forward(t) as fl.Tensor, x)
    .sum()
    .backward();
  assert.ok(lin.weight.grad);
  return new Promise<void>((resolve) =>
    setImmediate(() => {
      process.off('warning', listen);
      assert.ok(
        warnings.some((w) => /None of the inputs have requiresGrad=true/.test(w)),
        warnings.join('\n'),
      );
      resolve();
    }),
  );
});

test('preserveRngState: false draws new dropout masks in the recompute; options are checked', () => {
  fl.manualSeed(1);
  const drop = new nn.Dropout(0.5);
  const w = fl.ones([64], { dtype: 'f64' }).requiresGrad_();
  const fn = () => drop.forward(w) as fl.Tensor;
  const y = fl.utils.checkpoint(fn, { preserveRngState: false });
  y.sum().backward();
  const mask = (y.dataSync() as Float64Array).map((v) => (v !== 0 ? 1 : 0));
  const gmask = ((w.grad as fl.Tensor).dataSync() as Float64Array).map((v) => (v !== 0 ? 1 : 0));
  assert.not.equal(Array.from(gmask), Array.from(mask));
  assert.throws(
    () => fl.utils.checkpoint(fn, { useReentrant: 'yes' as unknown as boolean }),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
  assert.throws(
    () => fl.utils.checkpoint(fn, { useReentrant: false, preserve: true } as never),
    (e: { code?: string; message: string }) => e.code === 'ERR_ARG' && /preserveRngState/.test(e.message),
  );
  assert.throws(
    () => fl.utils.checkpoint(() => 3 as never),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
});

test.run();
