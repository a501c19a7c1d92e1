import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { values } from '../helpers/values';
import { close, type FixtureTensor } from '../fixtures/load';

// biome-ignore lint/suspicious/noExplicitAny: fixture cases of many shapes, checked by the tests that read them
const fx: Record<string, any> = JSON.parse(readFileSync(join(__dirname, '../fixtures/autocast_fixtures.json'), 'utf8')).cases;
const F = fl.nn.functional;
const DTYPES: Record<string, fl.CanonicalDType> = { bfloat16: 'bf16', float32: 'f32' };

/** A fixture tensor in its own dtype (bf16 values are exact in bf16). */
function load(f: FixtureTensor & { dtype: string }, requiresGrad = false): fl.Tensor {
  const t = fl.tensor(Float64Array.from(f.data), { shape: f.shape }).to(DTYPES[f.dtype] ?? 'f32');
  return requiresGrad ? t.requiresGrad_() : t;
}

const cpu = { device: 'cpu' as const, dtype: 'bf16' as const };

const ops: Record<string, (i: Record<string, fl.Tensor>) => fl.Tensor> = {
  matmul: (i) => fl.matmul(i.a, i.b),
  bmm: (i) => fl.bmm(i.a, i.b),
  linear: (i) => F.linear(i.x, i.w, i.b),
  conv2d: (i) => F.conv2d(i.x, i.w, i.b, { padding: 1 }),
  softmax: (i) => fl.softmax(i.x, -1),
  logSoftmax: (i) => fl.logSoftmax(i.x, -1),
  layerNorm: (i) => F.layerNorm(i.x, [8]),
  groupNorm: (i) => F.groupNorm(i.x, 2),
  exp: (i) => fl.exp(i.x),
  log: (i) => fl.log(i.x),
  sum: (i) => i.x.sum(),
  mean: (i) => i.x.mean(),
  mseLoss: (i) => F.mseLoss(i.a, i.b),
  add: (i) => fl.add(i.a, i.b),
};

for (const [name, fn] of Object.entries(ops)) {
  test(`autocast ${name}: dtype and values as PyTorch 1.13 CPU autocast (bf16)`, () => {
    const c = fx[name];
    const ins: Record<string, fl.Tensor> = {};
    for (const [k, v] of Object.entries(c.inputs)) ins[k] = load(v as FixtureTensor & { dtype: string });
    const y = fl.autocast(cpu, () => fn(ins));
    assert.is(y.dtype, DTYPES[c.output.dtype], `${name} dtype`);
    // bf16 results may differ by a unit or two: PyTorch's bf16 kernels sum in another order.
    close(y.to('f64'), c.output, y.dtype === 'bf16' ? 2 ** -6 : 1e-5, name);
  });
}

test('a 3-layer MLP under autocast: loss and gradients as PyTorch', () => {
  const c = fx.mlp;
  const mlp = new fl.nn.Sequential(
    new fl.nn.Linear(8, 16),
    new fl.nn.ReLU(),
    new fl.nn.Linear(16, 16),
    new fl.nn.ReLU(),
    new fl.nn.Linear(16, 4),
  );
  const byName = new Map<string, fl.Tensor>(mlp.namedParameters());
  for (const [n, t] of Object.entries(c.params)) {
    const p = byName.get(n);
    assert.ok(p, `parameter ${n}`);
    fl.noGrad(() => p.copy_(load(t as FixtureTensor & { dtype: string })));
  }
  const x = load(c.x);
  const y = fl.tensor(c.y, { dtype: 'i64' });
  const { logits, loss } = fl.autocast(cpu, () => {
    const l = mlp.forward(x) as fl.Tensor;
    return { logits: l, loss: F.crossEntropy(l, y) };
  });
  assert.is(logits.dtype, 'bf16');
  assert.is(loss.dtype, 'f32');
  close(logits.to('f64'), c.logits, 2 ** -6, 'logits');
  close(loss.to('f64'), c.loss, 1e-2, 'loss');
  loss.backward();
  for (const [n, g] of Object.entries(c.grads)) {
    const p = byName.get(n) as fl.Tensor;
    assert.is(p.grad?.dtype, 'f32', `grad ${n} dtype`);
    close((p.grad as fl.Tensor).to('f64'), g as FixtureTensor, 3e-2, `grad ${n}`);
  }
});

test('regions nest; enabled: false turns autocast off inside; the scope form works with using', () => {
  const a = fl.randn([3, 4]),
    b = fl.randn([4, 2]);
  fl.autocast(cpu, () => {
    assert.is(fl.matmul(a, b).dtype, 'bf16');
    fl.autocast({ device: 'cpu', enabled: false }, () => assert.is(fl.matmul(a, b).dtype, 'f32'));
    fl.autocast({ device: 'cpu', dtype: 'f16' }, () => assert.is(fl.matmul(a, b).dtype, 'f16'));
    assert.is(fl.matmul(a, b).dtype, 'bf16');
    // A region for CUDA leaves CPU ops alone.
    fl.autocast({ device: 'cuda', enabled: false }, () => assert.is(fl.matmul(a, b).dtype, 'bf16'));
  });
  assert.is(fl.matmul(a, b).dtype, 'f32');
  {
    using _scope = fl.autocast(cpu);
    assert.is(fl.matmul(a, b).dtype, 'bf16');
    assert.ok(fl.amp.isAutocastEnabled('cpu'));
  }
  assert.not.ok(fl.amp.isAutocastEnabled('cpu'));
  const scope = fl.autocast(cpu);
  try {
    assert.is(fl.matmul(a, b).dtype, 'bf16');
  } finally {
    scope.exit();
  }
  assert.is(fl.matmul(a, b).dtype, 'f32');
});

test('f64 tensors are never cast; integer ops are left alone', () => {
  const a = fl.randn([3, 4], { dtype: 'f64' }),
    b = fl.randn([4, 2], { dtype: 'f64' });
  fl.autocast(cpu, () => {
    assert.is(fl.matmul(a, b).dtype, 'f64');
    assert.is(fl.softmax(a).dtype, 'f64');
    assert.is(fl.tensor([1, 2], { dtype: 'i64' }).sum().dtype, 'i64');
  });
});

test('parameter casts are cached within a region and redone after an in-place update', () => {
  const w = new fl.nn.Parameter(fl.randn([4, 2, 3, 3]));
  const x = fl.randn([1, 2, 5, 5]);
  fl.autocast(cpu, () => {
    const y1 = F.conv2d(x, w);
    const y2 = F.conv2d(x, w);
    // Both convolutions read the same cached bf16 weight: the graph's cast node is shared.
    const castOf = (y: fl.Tensor) => (y.gradFn?.inputs ?? []).find((t) => t.dtype === 'bf16' && t.ndim === 4 && t.shape[0] === 4);
    const cast1 = castOf(y1);
    assert.ok(cast1 && cast1 === castOf(y2), 'cached cast reused');
    fl.noGrad(() => w.copy_(w.mul(2)));
    const cast3 = castOf(F.conv2d(x, w));
    assert.ok(cast3 && cast3 !== cast1, 'recast after the weight changed');
  });
});

test('cached casts are freed with the tidy scope the region ends in, not left to the garbage collector', async () => {
  const w = new fl.nn.Parameter(fl.randn([4, 2, 3, 3]));
  const b = new fl.nn.Parameter(fl.randn([4]));
  const x = fl.randn([1, 2, 5, 5]);
  await fl.sync();
  const before = fl.memory().cpu.tensors;
  fl.tidy(() => {
    const y = fl.autocast(cpu, () => F.conv2d(x, w, b).sum());
    y.backward();
  });
  await fl.sync();
  assert.is(fl.memory().cpu.tensors - before, 2, 'only the two gradients are left');
  // With no tidy scope open where the region ends, the casts stay alive for the graph (and the GC).
  const y = fl.autocast(cpu, () => F.conv2d(x, w, b).sum());
  y.backward();
  assert.is(w.grad?.dtype, 'f32');
});

test('linear and matmul under autocast round f32 operands in the GEMM: no cast nodes, the values and gradients of explicit casts bit for bit', () => {
  for (const dtype of ['bf16', 'f16'] as const) {
    for (const [lead, activation] of [
      [[6], 'relu'],
      [[2, 3], 'relu'],
      [[6], 'none'],
      [[6], 'gelu'],
    ] as const) {
      const w = new fl.nn.Parameter(fl.randn([5, 7]));
      const b = new fl.nn.Parameter(fl.randn([5]));
      const x = fl.randn([...lead, 7]).requiresGrad_();
      const y = fl.autocast({ device: 'cpu', dtype }, () => F.linear(x, w, b, { activation }));
      assert.is(y.dtype, dtype);
      // 3-D input: the layer runs on its [rows, 7] view and reshapes the result back.
      const act = lead.length === 1 ? y.gradFn : y.gradFn?.inputs[0].gradFn;
      // One linear node: the GEMM reads the f32 input and weight themselves; with none and relu the
      // bias kernel rounds the f32 bias itself, the smooth activations take it cast.
      assert.is(act?.name, 'linear');
      assert.equal(
        act?.inputs.map((t) => t.dtype),
        ['f32', 'f32', activation === 'gelu' ? dtype : 'f32'],
        `${activation}: the dtypes the layer takes`,
      );
      assert.ok(act?.inputs[1] === w, 'the GEMM reads the f32 weight itself');
      if (activation !== 'gelu') assert.ok(act?.inputs[2] === b, 'the bias kernel reads the f32 bias itself');
      const seed = fl.randn([...lead, 5]).to(dtype);
      y.backward(seed);
      // The reference: the same layer with every cast explicit.
      const w2 = new fl.nn.Parameter(fl.tensor(w.toArray() as number[][]));
      const b2 = new fl.nn.Parameter(fl.tensor(b.toArray() as number[]));
      const x2 = x.detach().clone().requiresGrad_();
      const y2 = F.linear(x2.to(dtype), w2.to(dtype), b2.to(dtype), { activation });
      y2.backward(seed);
      const what = `${dtype} ${lead} ${activation}`;
      assert.equal(values(y), values(y2), `${what} output`);
      for (const [got, want, name] of [
        [w, w2, 'weight'],
        [b, b2, 'bias'],
        [x, x2, 'input'],
      ] as const) {
        assert.is(got.grad?.dtype, 'f32', `${name} grad dtype`);
        assert.equal(values(got.grad as fl.Tensor), values(want.grad as fl.Tensor), `${what} ${name} grad`);
      }
    }
  }
  // fl.matmul: an f32 operand with a bf16 one, batch dims broadcast; gradients in each operand's dtype.
  const a = fl.randn([3, 4, 6]).requiresGrad_();
  const m = fl.randn([6, 2]).to('bf16').requiresGrad_();
  const p = fl.autocast(cpu, () => fl.matmul(a, m));
  assert.is(p.dtype, 'bf16');
  p.sum().backward();
  const a2 = a.detach().clone().requiresGrad_();
  const m2 = m.detach().clone().requiresGrad_();
  const p2 = fl.matmul(a2.to('bf16'), m2);
  p2.sum().backward();
  assert.equal(values(p), values(p2), 'matmul output');
  assert.is(a.grad?.dtype, 'f32');
  assert.is(m.grad?.dtype, 'bf16');
  assert.equal(values(a.grad as fl.Tensor), values(a2.grad as fl.Tensor), 'matmul f32 operand grad');
  assert.equal(values(m.grad as fl.Tensor), values(m2.grad as fl.Tensor), 'matmul bf16 operand grad');
  // Outside autocast mixed dtypes are still refused.
  assert.throws(
    () => fl.matmul(a, m),
    (e: { code?: string }) => e.code === 'ERR_DTYPE',
  );
});

test('under autocast an f64 operand is never cast: matmul and linear refuse the mix', () => {
  const a = fl.randn([2, 3]),
    b = fl.randn([3, 2], { dtype: 'f64' });
  for (const f of [() => fl.matmul(a, b), () => F.linear(a, b.transpose())])
    assert.throws(
      () => fl.autocast(cpu, f),
      (e: { code?: string }) => e.code === 'ERR_DTYPE',
    );
});

test('backward runs outside autocast and gives each input the gradient in its dtype', () => {
  const w = new fl.nn.Parameter(fl.randn([3, 5]));
  const x = fl.randn([4, 5]).requiresGrad_();
  const loss = fl.autocast(cpu, () => F.linear(x, w).sum());
  assert.is(loss.dtype, 'f32');
  loss.backward();
  assert.is(w.grad?.dtype, 'f32');
  assert.is(x.grad?.dtype, 'f32');
  // The reference: the same bf16 product done by hand.
  const w2 = new fl.nn.Parameter(fl.tensor(w.toArray() as number[][]));
  F.linear(x.detach().to('bf16'), w2.to('bf16')).to('f32').sum().backward();
  close(w.grad as fl.Tensor, { shape: [3, 5], data: Array.from((w2.grad as fl.Tensor).dataSync() as Float32Array) }, 0, 'weight grad');
});

test('the ops added with the manifest follow their declared policy: attention, addmm, baddbmm low; cumsum, cumprod, norm f32', () => {
  const q = fl.randn([2, 5, 8]);
  const m = fl.randn([4, 4]);
  const low = fl.randn([6], { dtype: 'bf16' });
  fl.autocast(cpu, () => {
    assert.is(fl.nn.functional.scaledDotProductAttention(q, q, q, { isCausal: true }).dtype, 'bf16');
    const additive = fl.zeros([5, 5]);
    assert.is(fl.nn.functional.scaledDotProductAttention(q, q, q, { attnMask: additive }).dtype, 'bf16');
    assert.is(fl.addmm(m, m, m).dtype, 'bf16');
    assert.is(fl.baddbmm(q.narrow(2, 0, 5), q, q.transpose(1, 2)).dtype, 'bf16');
    assert.is(fl.cumsum(low, 0).dtype, 'f32');
    assert.is(fl.cumprod(low, 0).dtype, 'f32');
    assert.is(fl.norm(low).dtype, 'f32');
    // An explicit dtype wins over the policy.
    assert.is(fl.cumsum(low, 0, { dtype: 'f64' }).dtype, 'f64');
  });
  // Outside a region nothing is cast.
  assert.is(fl.cumsum(low, 0).dtype, 'bf16');
  assert.is(fl.addmm(m, m, m).dtype, 'f32');
});

test('autocast options are checked', () => {
  assert.throws(
    () => fl.autocast({ device: 'tpu' } as never, () => 0),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
  assert.throws(
    () => fl.autocast({ device: 'cpu', dtype: 'f64' } as never, () => 0),
    (e: { code?: string }) => e.code === 'ERR_DTYPE',
  );
  assert.throws(
    () => fl.autocast({ device: 'cpu', fast: true } as never, () => 0),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
  const outer = fl.autocast(cpu);
  const inner = fl.autocast(cpu);
  assert.throws(
    () => outer.exit(),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
  inner.exit();
  outer.exit();
  assert.not.ok(fl.amp.isAutocastEnabled('cpu'));
});

test.run();
