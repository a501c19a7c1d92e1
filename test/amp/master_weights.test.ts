import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { rawAdamStep, rawSgdStep } from '../helpers/native_step';
import { values } from '../helpers/values';

/** Values exactly representable in bf16 and f16 (small multiples of 1/64). */
function exactGrid(n: number, seed: number): number[] {
  return Array.from({ length: n }, (_, i) => (((i * 37 + seed * 11) % 29) - 14) / 64);
}

const same = (a: fl.Tensor, b: fl.Tensor, what: string) => assert.equal(values(a), values(b), what);

for (const dtype of ['bf16', 'f16'] as const) {
  for (const [name, make] of [
    ['Adam', (ps: fl.Tensor[]) => new fl.optim.Adam(ps, { lr: 0.01, weightDecay: 0.1, amsgrad: true })],
    ['AdamW', (ps: fl.Tensor[]) => new fl.optim.AdamW(ps, { lr: 0.01 })],
    ['SGD', (ps: fl.Tensor[]) => new fl.optim.SGD(ps, { lr: 0.1, momentum: 0.9, nesterov: true })],
  ] as const) {
    test(`${name} on ${dtype} params: f32 master and state follow the f32 optimizer exactly; the param is the rounded master`, () => {
      const p0 = exactGrid(70, 1);
      const lo = new fl.nn.Parameter(fl.tensor(p0).to(dtype));
      const hi = new fl.nn.Parameter(fl.tensor(p0));
      const oLo = make([lo]),
        oHi = make([hi]);
      for (let s = 0; s < 3; s++) {
        const g = exactGrid(70, s + 2);
        lo.grad = fl.tensor(g).to(dtype);
        hi.grad = fl.tensor(g);
        oLo.step();
        oHi.step();
      }
      const st = oLo.state.get(lo) as Record<string, fl.Tensor>;
      assert.is(st.masterParam.dtype, 'f32');
      same(st.masterParam, hi, 'master = f32 trajectory');
      same(lo, hi.to(dtype), 'param = master rounded to nearest');
      for (const [k, v] of Object.entries(st)) if (typeof v !== 'number') assert.is(v.dtype, 'f32', `state ${k} is f32`);
    });
  }

  test(`stochastic rounding of ${dtype} copies is unbiased and reproducible from the seed`, () => {
    // Many equal updates, each far below half a unit of the copy: round-to-nearest never moves the
    // copy, stochastic rounding moves it on average as far as the master.
    const n = 4096;
    const run = (stochasticRounding: boolean) => {
      fl.manualSeed(7);
      const p = new fl.nn.Parameter(fl.ones([n]).to(dtype));
      const opt = new fl.optim.SGD([p], { lr: 1, stochasticRounding });
      p.grad = fl.full([n], -(2 ** -12)).to(dtype);
      opt.step();
      return p;
    };
    const nearest = run(false);
    const raw = Array.from(nearest.dataSync() as ArrayLike<number>);
    assert.ok(
      raw.every((b) => b === raw[0]),
      'nearest: all equal',
    );
    assert.is(nearest.to('f32').mean().itemSync(), 1);
    const sr = run(true);
    const mean = sr.to('f64').mean().itemSync();
    const unit = dtype === 'bf16' ? 2 ** -7 : 2 ** -10;
    const p = 2 ** -12 / unit; // probability of rounding up
    const sd = unit * Math.sqrt((p * (1 - p)) / n);
    assert.ok(Math.abs(mean - (1 + 2 ** -12)) < 5 * sd, `mean ${mean} vs ${1 + 2 ** -12} (sd ${sd})`);
    same(run(true), sr, 'same seed, same rounding');
  });

  test(`${dtype} optimizer state dicts save the f32 masters (masterParam) and load them back`, () => {
    const p = new fl.nn.Parameter(fl.tensor(exactGrid(10, 3)).to(dtype));
    const opt = new fl.optim.Adam([p], { lr: 0.01 });
    p.grad = fl.tensor(exactGrid(10, 4)).to(dtype);
    opt.step();
    const sd = opt.stateDict();
    assert.equal(Object.keys(sd.state[0]).sort(), ['expAvg', 'expAvgSq', 'masterParam', 'step']);
    const q = new fl.nn.Parameter(p.clone());
    const opt2 = new fl.optim.Adam([q], { lr: 0.01 });
    opt2.loadStateDict(sd);
    const m2 = (opt2.state.get(q) as Record<string, fl.Tensor>).masterParam;
    assert.is(m2.dtype, 'f32');
    same(m2, sd.state[0].masterParam as fl.Tensor, 'master restored');
    p.grad = fl.tensor(exactGrid(10, 5)).to(dtype);
    q.grad = p.grad.clone();
    opt.step();
    opt2.step();
    same(q, p, 'the restored optimizer continues identically');
  });
}

test('the fused step refuses bf16 params without masters and masters of the wrong dtype', () => {
  const p = fl.zeros([3]).to('bf16');
  const g = fl.zeros([3]).to('bf16');
  const s = fl.zeros([3]);
  assert.throws(
    () => rawSgdStep([p], [g]),
    (e: { code?: string; message: string }) => e.code === 'ERR_DTYPE' && /master/.test(e.message),
  );
  assert.throws(
    () => rawAdamStep([p], [g], [s], [s], [g]),
    (e: { code?: string }) => e.code === 'ERR_SHAPE',
  );
});

test('bf16 training end to end: a small MLP in bf16 with an f32-master Adam learns', () => {
  fl.manualSeed(3);
  const m = new fl.nn.Sequential(new fl.nn.Linear(4, 16), new fl.nn.ReLU(), new fl.nn.Linear(16, 3));
  m.to('bf16');
  const opt = new fl.optim.Adam(m.parameters(), { lr: 0.05 });
  const x = fl.randn([32, 4]).to('bf16');
  const y = x
    .to('f32')
    .sum(1)
    .gt(0)
    .to('i64')
    .add(x.to('f32').narrow(1, 0, 1).reshape([32]).gt(1).to('i64'));
  let first = 0,
    last = 0;
  for (let s = 0; s < 60; s++) {
    opt.zeroGrad();
    const loss = fl.nn.functional.crossEntropy(m.forward(x) as fl.Tensor, y);
    loss.backward();
    opt.step();
    const v = loss.to('f32').itemSync();
    if (s === 0) first = v;
    last = v;
  }
  assert.ok(last < first * 0.5, `loss ${first} -> ${last}`);
  for (const p of m.parameters()) assert.is(p.dtype, 'bf16');
});

test.run();
