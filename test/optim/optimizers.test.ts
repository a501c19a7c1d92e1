import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { close, fixtures, load, throwsCode } from '../fixtures/load';
import { rawAdamStep, rawSgdStep } from '../helpers/native_step';

const o = fixtures.optim;

function twoSteps(make: (p: fl.nn.Parameter) => fl.optim.Optimizer<{ lr: number }>, name: string): void {
  const p = new fl.nn.Parameter(load(o.p0).clone());
  const opt = make(p);
  p.grad = load(o.g0).clone();
  opt.step();
  close(p, o.results[name].after1, 1e-9, `${name} step 1`);
  p.grad = load(o.g1).clone();
  opt.step();
  close(p, o.results[name].after2, 1e-9, `${name} step 2`);
}

test('SGD matches PyTorch', () => twoSteps((p) => new fl.optim.SGD([p], { lr: 0.1 }), 'sgd'));
test('SGD with momentum, dampening and weight decay matches PyTorch', () =>
  twoSteps((p) => new fl.optim.SGD([p], { lr: 0.1, momentum: 0.9, dampening: 0.1, weightDecay: 0.01 }), 'sgd_momentum'));
test('SGD with Nesterov momentum matches PyTorch', () =>
  twoSteps((p) => new fl.optim.SGD([p], { lr: 0.1, momentum: 0.9, nesterov: true }), 'sgd_nesterov'));
test('Adam with weight decay matches PyTorch', () =>
  twoSteps((p) => new fl.optim.Adam([p], { lr: 0.01, betas: [0.8, 0.9], eps: 1e-6, weightDecay: 0.1 }), 'adam'));
test('AdamW matches PyTorch', () => twoSteps((p) => new fl.optim.AdamW([p], { lr: 0.01, weightDecay: 0.1 }), 'adamw'));

test('SGD with maximize matches PyTorch', () =>
  twoSteps((p) => new fl.optim.SGD([p], { lr: 0.1, momentum: 0.9, weightDecay: 0.01, maximize: true }), 'sgd_maximize'));
test('Adam with amsgrad matches PyTorch', () =>
  twoSteps((p) => new fl.optim.Adam([p], { lr: 0.01, betas: [0.8, 0.9], eps: 1e-6, weightDecay: 0.1, amsgrad: true }), 'adam_amsgrad'));
test('AdamW with amsgrad and maximize matches PyTorch', () =>
  twoSteps((p) => new fl.optim.AdamW([p], { lr: 0.01, weightDecay: 0.1, amsgrad: true, maximize: true }), 'adamw_amsgrad_maximize'));

/** torch.optim.Adam(amsgrad=True) for one parameter, in f64 on the host. */
function amsgradReference(p0: number[], grads: number[][], lr: number, b1: number, b2: number, eps: number, amsgrad = true): number[] {
  const p = [...p0],
    m = p.map(() => 0),
    v = p.map(() => 0),
    vmax = p.map(() => 0);
  grads.forEach((g, k) => {
    const step = k + 1,
      bc1 = 1 - b1 ** step,
      bc2 = 1 - b2 ** step;
    for (let i = 0; i < p.length; i++) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      vmax[i] = amsgrad ? Math.max(vmax[i], v[i]) : v[i];
      p[i] -= ((lr / bc1) * m[i]) / (Math.sqrt(vmax[i]) / Math.sqrt(bc2) + eps);
    }
  });
  return p;
}

for (const dtype of ['f32', 'f64'] as const)
  test(`Adam amsgrad keeps the running maximum of v (${dtype}, f64 reference, shrinking gradients)`, () => {
    // Gradients that shrink make v fall below its maximum, the case amsgrad changes.
    const grads = [
      [3, -2, 1, 0.5],
      [0.1, -0.2, 2, 0.5],
      [0.05, 0.1, -0.1, 0.4],
    ];
    const p = new fl.nn.Parameter(fl.tensor([1, 2, -1, 0.5], { dtype }));
    const opt = new fl.optim.Adam([p], { lr: 0.1, betas: [0.5, 0.6], amsgrad: true });
    for (const g of grads) {
      p.grad = fl.tensor(g, { dtype });
      opt.step();
    }
    const want = amsgradReference([1, 2, -1, 0.5], grads, 0.1, 0.5, 0.6, 1e-8);
    const got = Array.from(p.dataSync() as Float32Array | Float64Array);
    got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) <= (dtype === 'f64' ? 1e-12 : 1e-5), `${i}: ${x} vs ${want[i]}`));
    const plain = amsgradReference([1, 2, -1, 0.5], grads, 0.1, 0.5, 0.6, 1e-8, false);
    assert.ok(
      plain.some((x, i) => Math.abs(x - want[i]) > 1e-3),
      'the gradients exercise the maximum',
    );
    const s = opt.state.get(p) as Record<string, fl.Tensor>;
    assert.ok(s.maxExpAvgSq instanceof fl.Tensor, 'state keeps maxExpAvgSq');
    assert.equal(Object.keys(opt.stateDict().state[0]).sort(), ['expAvg', 'expAvgSq', 'maxExpAvgSq', 'step']);
  });

test('optimizer options are checked at construction: kinds ERR_ARG, ranges ERR_RANGE, unknown keys named', () => {
  const p = new fl.nn.Parameter(fl.ones([2]));
  throwsCode(() => new fl.optim.SGD([p], { lr: 'fast' as unknown as number }), 'ERR_ARG');
  throwsCode(() => new fl.optim.SGD([p], { lr: -0.1 }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.SGD([p], { lr: NaN }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.SGD([p], { lr: 0.1, nesterov: 1 as unknown as boolean }), 'ERR_ARG');
  throwsCode(() => new fl.optim.Adam([p], { betas: [0.9, 1] }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.Adam([p], { betas: 0.9 as unknown as [number, number] }), 'ERR_ARG');
  throwsCode(() => new fl.optim.AdamW([p], { amsgrad: 'yes' as unknown as boolean }), 'ERR_ARG');
  try {
    new fl.optim.Adam([p], { weightDecy: 0.1 } as never);
    assert.unreachable('unknown key accepted');
  } catch (e) {
    const m = (e as Error).message;
    assert.is((e as { code?: string }).code, 'ERR_ARG');
    assert.ok(m.startsWith("Adam: unknown option 'weightDecy' (did you mean 'weightDecay'?)"), m);
    assert.ok(m.includes('amsgrad') && m.includes('maximize'), m);
  }
  // Param groups are checked the same way, naming the group.
  throwsCode(() => new fl.optim.SGD([{ params: [p], lr: 'x' as unknown as number }]), 'ERR_ARG');
  throwsCode(() => new fl.optim.SGD([{ params: [p], momentun: 0.9 } as never]), 'ERR_ARG');
  throwsCode(() => new fl.optim.SGD(p as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.SGD([fl.ones([2], { dtype: 'i64' })]), 'ERR_DTYPE');
  // A hyper-parameter broken after construction is caught at step, before anything is updated.
  const opt = new fl.optim.SGD([p], { lr: 0.1 });
  p.grad = fl.ones([2]);
  (opt.paramGroups[0] as { lr: unknown }).lr = 'fast';
  throwsCode(() => opt.step(), 'ERR_ARG');
  assert.equal(p.toArray(), [1, 1]);
});

test('param groups keep their own lr; zeroGrad clears or zeroes', () => {
  const a = new fl.nn.Parameter(fl.ones([2])),
    b = new fl.nn.Parameter(fl.ones([2]));
  const opt = new fl.optim.SGD([{ params: [a] }, { params: [b], lr: 1 }], { lr: 0.1 });
  a.grad = fl.ones([2]);
  b.grad = fl.ones([2]);
  opt.step();
  assert.equal(a.toArray(), [0.8999999761581421, 0.8999999761581421]);
  assert.equal(b.toArray(), [0, 0]);
  opt.zeroGrad(false);
  assert.equal(a.grad?.toArray(), [0, 0]);
  opt.zeroGrad();
  assert.is(a.grad, null);
  throwsCode(() => new fl.optim.SGD([{ params: [a] }, { params: [a] }]), 'ERR_ARG');
  throwsCode(() => new fl.optim.SGD([a], { lr: 0.1, nesterov: true }), 'ERR_ARG');
});

test('the fused native step rejects mismatched state with a coded error', () => {
  const p = fl.zeros([3]),
    g = fl.zeros([4]);
  assert.throws(
    () => rawAdamStep([p], [g], [p], [p]),
    (e: { code?: string }) => e.code === 'ERR_SHAPE',
  );
  assert.throws(
    () => rawSgdStep([p], []),
    (e: { code?: string }) => e.code === 'ERR_ARG',
  );
});

test('Adam state dict round-trips', () => {
  const p = new fl.nn.Parameter(load(o.p0).clone());
  const opt = new fl.optim.Adam([p], { lr: 0.01 });
  p.grad = load(o.g0).clone();
  opt.step();
  const sd = opt.stateDict();
  assert.equal(sd.paramGroups[0].params, [0]);
  assert.is(sd.state[0].step, 1);
  const q = new fl.nn.Parameter(p.clone());
  const opt2 = new fl.optim.Adam([q], { lr: 0.5 });
  opt2.loadStateDict(sd);
  assert.is(opt2.paramGroups[0].lr, 0.01);
  p.grad = load(o.g1).clone();
  q.grad = load(o.g1).clone();
  opt.step();
  opt2.step();
  assert.equal(p.toArray(), q.toArray());
});

test('Optimizer.loadStateDict checks everything before changing anything', () => {
  const a = new fl.nn.Parameter(fl.tensor([1, 2], { dtype: 'f64' })),
    b = new fl.nn.Parameter(
      fl.tensor(
        [
          [1, 2],
          [3, 4],
        ],
        { dtype: 'f64' },
      ),
    );
  const opt = new fl.optim.Adam([{ params: [a] }, { params: [b], lr: 0.5 }], { lr: 0.01 });
  a.grad = fl.ones([2], { dtype: 'f64' });
  b.grad = fl.ones([2, 2], { dtype: 'f64' });
  opt.step();
  const snapshot = () =>
    JSON.stringify({
      groups: opt.paramGroups.map(({ params, ...h }) => ({ ...h, n: params.length })),
      state: [...opt.state.entries()].map(([p, s]) => [
        p === a ? 'a' : 'b',
        Object.fromEntries(Object.entries(s).map(([k, v]) => [k, typeof v === 'number' ? v : (v as fl.Tensor).toArray()])),
      ]),
    });
  const before = snapshot();
  const good = opt.stateDict();
  // The last state entry (parameter 1, b) has the wrong shape: groups' lr would change first.
  const bad = {
    paramGroups: good.paramGroups.map((g) => ({ ...g, lr: 0.123 })),
    state: { 0: good.state[0], 1: { ...good.state[1], expAvgSq: fl.zeros([3], { dtype: 'f64' }) } },
  };
  throwsCode(() => opt.loadStateDict(bad), 'ERR_SHAPE');
  assert.is(snapshot(), before);
  throwsCode(() => opt.loadStateDict({ ...good, paramGroups: [good.paramGroups[0], { ...good.paramGroups[1], lr: 'x' }] }), 'ERR_ARG');
  throwsCode(
    () => opt.loadStateDict({ ...good, paramGroups: [good.paramGroups[0], { ...good.paramGroups[1], foo: 1 }] }),
    'ERR_STATE_DICT',
  );
  throwsCode(() => opt.loadStateDict({ ...good, state: { 0: { step: 1, expAvg: good.state[0].expAvg } } }), 'ERR_STATE_DICT');
  throwsCode(() => opt.loadStateDict({ ...good, state: { 7: good.state[0] } }), 'ERR_STATE_DICT');
  throwsCode(() => opt.loadStateDict({ ...good, paramGroups: [good.paramGroups[0]] }), 'ERR_STATE_DICT');
  assert.is(snapshot(), before);
  throwsCode(() => opt.loadStateDict({} as never), 'ERR_STATE_DICT');
  throwsCode(() => opt.loadStateDict(null as never), 'ERR_ARG');
  // A good one still loads after the failures.
  opt.loadStateDict(good);
  assert.is(snapshot(), before);
});

test('clipGradNorm_ and clipGradValue_', () => {
  const p = new fl.nn.Parameter(fl.zeros([2]));
  p.grad = fl.tensor([3, 4], { dtype: 'f32' });
  const norm = fl.optim.clipGradNorm_([p], 1);
  assert.ok(Math.abs(norm.itemSync() - 5) < 1e-5);
  const g = p.grad.dataSync() as Float32Array;
  assert.ok(Math.abs(g[0] - 0.6) < 1e-5 && Math.abs(g[1] - 0.8) < 1e-5);
  fl.optim.clipGradValue_([p], 0.7);
  assert.ok(Math.abs((p.grad.dataSync() as Float32Array)[1] - 0.7) < 1e-6);
});

function refNorm(arrays: number[][], p: number): number {
  const all = arrays.flat().map(Math.abs);
  return p === Infinity ? Math.max(...all) : all.reduce((a, v) => a + v ** p, 0) ** (1 / p);
}

for (const dtype of ['f32', 'f64'] as const) {
  for (const p of [2, 1, 3, Infinity]) {
    test(`clipGradNorm_ over several tensors (${dtype}, p=${p}) matches an f64 reference`, () => {
      fl.manualSeed(11);
      const params = [1, 7, 70001].map((n) => new fl.nn.Parameter(fl.zeros([n], { dtype })));
      params.forEach((q) => (q.grad = fl.randn([...q.shape], { dtype })));
      const before = params.map((q) => Array.from(q.grad!.dataSync() as Float64Array, Number));
      const want = refNorm(before, p);
      const tol = dtype === 'f64' ? 1e-12 : 1e-5;
      assert.ok(Math.abs(fl.optim.gradNorm(params, p).itemSync() - want) <= tol * want);
      const maxNorm = want / 4;
      const norm = fl.optim.clipGradNorm_(params, maxNorm, p);
      assert.is(norm.dtype, dtype);
      assert.ok(Math.abs(norm.itemSync() - want) <= tol * want);
      const coef = maxNorm / (want + 1e-6);
      params.forEach((q, k) => {
        const got = q.grad!.dataSync() as Float64Array;
        before[k].forEach((v, i) => assert.ok(Math.abs(got[i] - v * coef) <= tol * Math.max(1, Math.abs(v)), `grad ${k}[${i}]`));
      });
      // Below the limit nothing changes.
      const after = params.map((q) => Array.from(q.grad!.dataSync() as Float64Array, Number));
      fl.optim.clipGradNorm_(params, want, p);
      params.forEach((q, k) => assert.equal(Array.from(q.grad!.dataSync() as Float64Array, Number), after[k]));
    });
  }
}

test('clipGradNorm_ combines gradients of different dtypes; NaN gradients give a NaN norm', () => {
  const a = new fl.nn.Parameter(fl.zeros([2])),
    b = new fl.nn.Parameter(fl.zeros([1], { dtype: 'f64' }));
  a.grad = fl.tensor([3, 0], { dtype: 'f32' });
  b.grad = fl.tensor([4], { dtype: 'f64' });
  assert.ok(Math.abs(fl.optim.clipGradNorm_([a, b], 1).itemSync() - 5) < 1e-6);
  assert.ok(Math.abs((a.grad.dataSync() as Float32Array)[0] - 0.6) < 1e-6 && Math.abs((b.grad.dataSync() as Float64Array)[0] - 0.8) < 1e-6);
  a.grad = fl.tensor([NaN, 1], { dtype: 'f32' });
  assert.ok(Number.isNaN(fl.optim.gradNorm([a]).itemSync()));
  assert.ok(Number.isNaN(fl.optim.gradNorm([a], Infinity).itemSync()));
});

test('gradNorm and clipGradNorm_ reject bad arguments with codes', () => {
  const a = new fl.nn.Parameter(fl.zeros([2]));
  a.grad = fl.ones([2]);
  throwsCode(() => fl.optim.gradNorm([a], 0), 'ERR_RANGE', RangeError);
  throwsCode(() => fl.optim.clipGradNorm_([a], -1), 'ERR_RANGE', RangeError);
  throwsCode(() => fl.optim.clipGradNorm_([a], NaN), 'ERR_RANGE', RangeError);
  assert.is(fl.optim.gradNorm([new fl.nn.Parameter(fl.zeros([1]))]).itemSync(), 0);
});

test.run();
