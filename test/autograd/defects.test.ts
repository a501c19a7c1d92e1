/**
 * Autograd behaviours that must match PyTorch (issue "No surprises"): a second backward through a
 * freed graph, NaN through relu, pow/std/var gradients at their edge points, grad mode with async
 * functions, and in-place writes to tensors saved for backward. The expected values are what
 * torch 2.13 gives; test/fixtures/check_autograd_defects.py re-derives every one of them.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import type { Tensor } from '../../lib/index';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';

const F = fl.nn.functional;
const f64 = (v: number[] | number[][], requiresGrad = false): Tensor => fl.tensor(v, { dtype: 'f64', requiresGrad });

function expectAutograd(fn: () => unknown, pattern: RegExp): void {
  expectError(fn, Error, 'ERR_AUTOGRAD', pattern);
}

// ---- 1. a second backward through the same graph ----

test('second backward through a freed graph throws ERR_AUTOGRAD naming the op', () => {
  const x = f64([1, 2], true);
  const y = x.mul(x).sum();
  y.backward();
  assert.equal(values(x.grad!), [2, 4]);
  expectAutograd(() => y.backward(), /backward through the graph a second time.*\bsum\b.*retainGraph/);
  // Nothing was accumulated by the failed call.
  assert.equal(values(x.grad!), [2, 4]);
});

test('backward from an intermediate of a freed graph throws, naming the freed op', () => {
  const x = f64([1, 2], true);
  const h = x.mul(3);
  h.exp().sum().backward();
  expectAutograd(() => h.mul(2).sum().backward(), /second time.*\bmul\b/);
});

test('retainGraph: true keeps the graph for another backward', () => {
  const x = f64([1, 2], true);
  const y = x.mul(x).sum();
  y.backward(undefined, { retainGraph: true });
  y.backward({ retainGraph: true });
  y.backward();
  assert.equal(values(x.grad!), [6, 12]);
  expectAutograd(() => y.backward(), /second time/);
});

test('backward frees what the graph saved: the tensors only the graph held become collectable', async () => {
  const v8 = await import('node:v8');
  const vm = await import('node:vm');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const x = f64([1, 2], true);
  let ref!: WeakRef<Tensor>;
  const y = (() => {
    const h = x.mul(3);
    ref = new WeakRef(h);
    return h.mul(h).sum();
  })();
  y.backward();
  // deref() keeps its target alive until the current job ends, so collect in a fresh job.
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  assert.is(ref.deref(), undefined, 'the intermediate x*3 is still reachable from the graph after backward');
  assert.is(y.isLeaf, false, 'y keeps its gradFn (as torch keeps grad_fn)');
});

test('backward validates its arguments and options', () => {
  const x = f64([1, 2], true);
  const y = x.mul(2).sum();
  expectError(
    () => y.backward(undefined, { retainGrahp: true } as never),
    TypeError,
    'ERR_ARG',
    /unknown option 'retainGrahp'.*did you mean 'retainGraph'/,
  );
  expectError(() => y.backward(undefined, { retainGraph: 'yes' } as never), TypeError, 'ERR_ARG', /retainGraph must be a boolean/);
  expectError(() => y.backward(2 as never), TypeError, 'ERR_ARG', /grad must be a Tensor/);
  // The graph is intact after rejected calls.
  y.backward(null);
  assert.equal(values(x.grad!), [2, 2]);
});

// ---- 2. relu propagates NaN ----

const withNaN = [NaN, -1, 0, 2];

test('relu(NaN) is NaN: fl.relu, Tensor.relu, F.relu, nn.ReLU', () => {
  for (const [name, f] of [
    ['fl.relu', (t: Tensor) => fl.relu(t)],
    ['Tensor.relu', (t: Tensor) => t.relu()],
    ['F.relu', (t: Tensor) => F.relu(t)],
    ['nn.ReLU', (t: Tensor) => new fl.nn.ReLU().forward(t)],
  ] as const) {
    for (const dtype of ['f32', 'f64'] as const) close(values(f(fl.tensor(withNaN, { dtype }))), [NaN, 0, 0, 2], 0, 0, `${name} ${dtype}`);
  }
});

test('relu backward at NaN passes the gradient, as torch (threshold_backward on the result)', () => {
  const x = f64(withNaN, true);
  x.relu().sum().backward();
  // torch.relu(x).sum().backward() gives x.grad = [1, 0, 0, 1]
  assert.equal(values(x.grad!), [1, 0, 0, 1]);
});

test('leakyRelu propagates NaN forward; its gradient at NaN is the slope', () => {
  const x = f64(withNaN, true);
  const y = fl.leakyRelu(x, 0.01);
  close(values(y), [NaN, -0.01, 0, 2], 0, 0, 'leakyRelu');
  y.sum().backward();
  assert.equal(values(x.grad!), [0.01, 0.01, 0.01, 1]);
});

test('linear with the fused relu propagates NaN, and its gradients match torch', () => {
  for (const dtype of ['f32', 'f64'] as const) {
    const x = fl.tensor([[NaN, 1]], { dtype, requiresGrad: true });
    const w = fl.tensor(
      [
        [1, 0],
        [0, 1],
      ],
      { dtype, requiresGrad: true },
    );
    const b = fl.tensor([0, 0], { dtype, requiresGrad: true });
    const y = F.linear(x, w, b, { activation: 'relu' });
    close(values(y), [NaN, NaN], 0, 0, `linear relu ${dtype}`);
    y.sum().backward();
    // torch: relu(F.linear(x, w, b)).sum().backward()
    close(values(x.grad!), [1, 1], 0, 0, 'x.grad');
    close(values(w.grad!), [NaN, 1, NaN, 1], 0, 0, 'w.grad');
    close(values(b.grad!), [1, 1], 0, 0, 'b.grad');
  }
  // A NaN in a row of x makes that whole output row NaN (NaN * 0 in the matmul); other rows are finite.
  const big = fl.randn([6, 5]).maskedFill(fl.randn([6, 5]).gt(1.2), NaN);
  const w = fl.randn([4, 5]),
    b = fl.randn([4]);
  const fused = values(F.linear(big, w, b, { activation: 'relu' }));
  close(fused, values(F.linear(big, w, b).relu()), 0, 0, 'fused vs unfused');
  assert.ok(fused.some(Number.isNaN) && fused.some((v) => v > 0), 'the case mixes NaN and positive outputs');
});

// ---- 3. pow, var and std gradients at their edge points ----

test('x.pow(0) has gradient 0 everywhere, including x = 0 (torch: 0, not 0 * 0^-1 = NaN)', () => {
  const x = f64([0, -0, 2, -2], true);
  const y = x.pow(0);
  assert.equal(values(y), [1, 1, 1, 1]);
  y.sum().backward();
  assert.equal(values(x.grad!), [0, 0, 0, 0]);
});

test('x.pow(e) at x = 0 for e in 1, 2, 0.5, -1 matches torch', () => {
  for (const [e, grad] of [
    [1, 1],
    [2, 0],
    [0.5, Infinity],
    [-1, -Infinity],
    [3, 0],
  ]) {
    const x = f64([0], true);
    x.pow(e).sum().backward();
    assert.equal(values(x.grad!), [grad], `d/dx x^${e} at 0`);
  }
});

test('tensor pow with zero bases: both gradients match torch', () => {
  // [exponent, value, d/dbase, d/dexponent] at base 0 (torch 2.13).
  const rows: [number, number, number, number][] = [
    [0, 1, 0, 0],
    [1, 0, 1, 0],
    [2, 0, 0, 0],
    [0.5, 0, Infinity, 0],
    [-1, Infinity, -Infinity, -Infinity],
    [-0.5, Infinity, -Infinity, -Infinity],
  ];
  const base = f64(
    rows.map(() => 0),
    true,
  );
  const exp = f64(
    rows.map((r) => r[0]),
    true,
  );
  const y = base.pow(exp);
  assert.equal(
    values(y),
    rows.map((r) => r[1]),
  );
  y.sum().backward();
  assert.equal(
    values(base.grad!),
    rows.map((r) => r[2]),
    'd/dbase',
  );
  assert.equal(
    values(exp.grad!),
    rows.map((r) => r[3]),
    'd/dexponent',
  );
});

test('tensor pow with exponent 0 and nonzero bases: d/dbase 0, d/dexponent log(base)', () => {
  const base = f64([2, -2, 1], true);
  const exp = f64([0, 0, 0], true);
  base.pow(exp).sum().backward();
  assert.equal(values(base.grad!), [0, 0, 0]);
  close(values(exp.grad!), [Math.LN2, NaN, 0], 1e-12, 0, 'd/dexponent');
});

const rowsVar = [
  [3, 3, 3],
  [1, 2, 4],
];

function varGradRef(row: number[], correction: number): number[] {
  const m = row.reduce((a, b) => a + b, 0) / row.length;
  return row.map((v) => (2 * (v - m)) / (row.length - correction));
}

test('var of a zero-variance row has gradient 0 (correction 1 and 0)', () => {
  for (const correction of [1, 0]) {
    const x = f64(rowsVar, true);
    x.var(1, { correction }).sum().backward();
    close(
      values(x.grad!),
      rowsVar.flatMap((r) => varGradRef(r, correction)),
      1e-12,
      1e-15,
      `var correction ${correction}`,
    );
  }
});

test('std of a zero-variance row has gradient 0, as torch (it masks grad / (2 std) where std == 0)', () => {
  for (const correction of [1, 0]) {
    for (const keepdim of [false, true]) {
      const x = f64(rowsVar, true);
      const s = x.std(1, { correction, keepdim });
      s.sum().backward();
      const sd = values(s);
      assert.is(sd[0], 0);
      const expected = rowsVar.flatMap((r, i) => (sd[i] === 0 ? r.map(() => 0) : varGradRef(r, correction).map((g) => g / (2 * sd[i]))));
      close(values(x.grad!), expected, 1e-12, 1e-15, `std correction ${correction} keepdim ${keepdim}`);
    }
  }
  const all = f64([5, 5], true);
  all.std().backward();
  assert.equal(values(all.grad!), [0, 0]);
});

test('std and var of a single element are NaN with NaN gradients (correction 1), as torch', () => {
  for (const f of [(t: Tensor) => t.std(), (t: Tensor) => t.var()]) {
    const x = f64([5], true);
    const y = f(x);
    close(values(y), [NaN], 0, 0, 'value');
    y.backward();
    close(values(x.grad!), [NaN], 0, 0, 'grad');
  }
});

// ---- 4. grad mode and async functions ----

test('noGrad and enableGrad reject async functions without running them', () => {
  for (const [name, mode] of [
    ['noGrad', fl.noGrad],
    ['enableGrad', fl.enableGrad],
  ] as const) {
    let ran = false;
    expectError(
      () =>
        mode(async () => {
          ran = true;
        }),
      TypeError,
      'ERR_ARG',
      new RegExp(`${name}: .*async.*${name}\\(\\(\\) => \\.\\.\\.\\) inside`),
    );
    assert.is(ran, false, `${name} ran the async function`);
    assert.is(fl.isGradEnabled(), true);
  }
});

test('noGrad rejects a function that returns a promise, and restores grad mode', async () => {
  let late: boolean | undefined;
  const run = () =>
    fl.noGrad(() =>
      Promise.resolve().then(() => {
        late = fl.isGradEnabled();
      }),
    );
  expectError(run, TypeError, 'ERR_ARG', /returned a promise/);
  assert.is(fl.isGradEnabled(), true);
  await new Promise((r) => setImmediate(r));
  // The work after the first await ran with grad mode on: exactly why the call is refused.
  assert.is(late, true);
});

test('noGrad inside async code covers the synchronous block', async () => {
  const x = fl.tensor([1, 2], { requiresGrad: true });
  await Promise.resolve();
  const y = fl.noGrad(() => x.mul(2));
  assert.is(y.requiresGrad, false);
  expectError(() => fl.noGrad(42 as never), TypeError, 'ERR_ARG', /expected a function/);
});

// ---- 5. in-place writes and version counters ----

test('a tensor saved for backward and then modified in place makes backward throw, naming both ops', () => {
  const x = f64([1, 2], true);
  const w = f64([3, 4]);
  const y = x.mul(w).sum();
  w.copy_(f64([5, 6]));
  expectAutograd(() => y.backward(), /a tensor saved by mul for backward was modified in place by copy_/);
  assert.is(x.grad, null);
});

test('writes through a view or a detached alias count against the saved tensor', () => {
  const x = f64([1, 2, 3, 4], true);
  const w = f64([1, 1, 1, 1]);
  const y = x.mul(w).sum();
  w.reshape([2, 2]).copy_(
    f64([
      [2, 2],
      [2, 2],
    ]),
  );
  expectAutograd(() => y.backward(), /saved by mul.*modified in place by copy_/);

  const x2 = f64([1, 2], true);
  const y2 = x2.exp().sum();
  fl.noGrad(() => x2.detach().copy_(f64([0, 0])));
  expectAutograd(() => y2.backward(), /saved by exp.*modified in place/);
});

test('in-place writes to tensors the graph did not save leave backward working', () => {
  const x = f64([1, 2], true);
  const w = f64([3, 4]);
  const other = f64([0, 0]);
  const y = x.mul(w).sum();
  other.copy_(f64([9, 9]));
  y.backward();
  assert.equal(values(x.grad!), [3, 4]);
});

test('in-place write into a tensor that requires grad throws outside noGrad, works inside', () => {
  const p = f64([1, 2], true);
  expectAutograd(() => p.copy_(f64([3, 4])), /copy_: a leaf tensor that requires grad cannot be modified in place outside noGrad/);
  assert.equal(values(p), [1, 2]);
  fl.noGrad(() => p.copy_(f64([3, 4])));
  assert.equal(values(p), [3, 4]);
  // A non-leaf may be written: its history is rebased onto the copy (a zero gradient to its old value).
  const h = p.mul(2);
  h.copy_(f64([5, 6]));
  h.sum().backward();
  assert.equal(values(h), [5, 6]);
  assert.equal(values(p.grad!), [0, 0]);
});

test('optimizer steps (in place, under noGrad) keep working and count as in-place writes', () => {
  for (const make of [(ps: Tensor[]) => new fl.optim.SGD(ps, { lr: 0.1 }), (ps: Tensor[]) => new fl.optim.Adam(ps, { lr: 0.1 })]) {
    const w = new fl.nn.Parameter(fl.tensor([1, 2], { dtype: 'f32' }));
    const opt = make([w]);
    const loss = w.mul(w).sum();
    loss.backward({ retainGraph: true });
    opt.step();
    assert.ok(values(w)[0] < 1, 'the step updated the parameter');
    // mul saved w; the step changed it, so the retained graph is stale (torch raises the same).
    expectAutograd(() => loss.backward(), /saved by mul.*modified in place by (SGD|Adam)\.step/);
    opt.zeroGrad();
    w.mul(w).sum().backward();
    assert.ok(w.grad !== null);
  }
});

test.run();
