import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';
import { caught } from '../helpers/errors';
import { values } from '../helpers/values';
import { native } from '../../lib/native';

// biome-ignore lint/suspicious/noExplicitAny: fixture cases of several shapes
const fixtures: any = JSON.parse(readFileSync(join(__dirname, '../fixtures/optim_extra_fixtures.json'), 'utf8'));

type Make = (ps: fl.Tensor[]) => fl.optim.Optimizer<{ lr: number }>;

// biome-ignore lint/suspicious/noExplicitAny: a fixture case's options
function maker(name: string, options: any): Make {
  return name === 'RMSprop' ? (ps) => new fl.optim.RMSprop(ps, options) : (ps) => new fl.optim.Adagrad(ps, options);
}

for (const name of ['RMSprop', 'Adagrad'])
  for (const dtype of ['f64', 'f32'] as const)
    test(`${name} matches PyTorch 1.13 over every option combination, 5 steps, two tensors (${dtype})`, () => {
      // biome-ignore lint/suspicious/noExplicitAny: fixture cases
      const cases = fixtures.optim.filter((c: any) => c.optimizer === name && c.dtype === dtype);
      assert.ok(cases.length >= 16, `${cases.length} cases`);
      // f64 agrees to rounding; f32 to a few units in the last place of the update's inputs.
      const tol = dtype === 'f64' ? 1e-12 : 2e-6;
      for (const c of cases) {
        const ps = c.shapes.map(
          (s: number[], i: number) => new fl.nn.Parameter(fl.tensor(Float64Array.from(c.init[i]), { shape: s }).to(dtype)),
        ) as fl.nn.Parameter[];
        const opt = maker(name, c.options)(ps);
        c.grads.forEach((gs: number[][], k: number) => {
          ps.forEach((p, i) => (p.grad = fl.tensor(Float64Array.from(gs[i]), { shape: c.shapes[i] }).to(dtype)));
          opt.step();
          ps.forEach((p, i) => {
            const got = values(p);
            const want: number[] = c.after[k][i];
            const bad = got.findIndex((v, j) => !(Math.abs(v - want[j]) <= tol * Math.max(1, Math.abs(want[j]))));
            assert.ok(bad < 0, `${name} ${JSON.stringify(c.options)} step ${k + 1} tensor ${i} [${bad}]: ${got[bad]} vs ${want[bad]}`);
          });
        });
      }
    });

const CONFIGS: Array<[string, Make]> = [
  [
    'RMSprop centered + momentum + weight decay',
    (ps) => new fl.optim.RMSprop(ps, { lr: 0.01, momentum: 0.9, centered: true, weightDecay: 0.1 }),
  ],
  ['RMSprop plain', (ps) => new fl.optim.RMSprop(ps, { lr: 0.01 })],
  ['Adagrad with lr decay', (ps) => new fl.optim.Adagrad(ps, { lr: 0.1, lrDecay: 0.3, initialAccumulatorValue: 0.2, weightDecay: 0.01 })],
];

function grads(k: number, n: number): Float64Array {
  return Float64Array.from({ length: n }, (_, i) => Math.sin(k * 7.1 + i * 1.3) * (1 + (i % 3)));
}

for (const dtype of ['f32', 'f64', 'bf16'] as const)
  for (const [name, make] of CONFIGS)
    test(`${name} (${dtype}): N steps, stateDict, load into a fresh optimizer, N more = 2N uninterrupted, bit for bit`, () => {
      const shapes = [[4, 3], [7]];
      const init = (i: number) =>
        fl
          .tensor(
            grads(
              100 + i,
              shapes[i].reduce((a, b) => a * b),
            ),
            { shape: shapes[i] },
          )
          .to(dtype);
      const setGrads = (ps: fl.Tensor[], k: number) =>
        ps.forEach((p, i) => (p.grad = fl.tensor(grads(3 * k + i, p.numel()), { shape: [...p.shape] }).to(dtype)));
      const whole = shapes.map((_, i) => new fl.nn.Parameter(init(i)));
      const oWhole = make(whole);
      for (let k = 0; k < 6; k++) {
        setGrads(whole, k);
        oWhole.step();
      }
      const first = shapes.map((_, i) => new fl.nn.Parameter(init(i)));
      const oFirst = make(first);
      for (let k = 0; k < 3; k++) {
        setGrads(first, k);
        oFirst.step();
      }
      const sd = oFirst.stateDict();
      const resumed = first.map((p) => new fl.nn.Parameter(p.detach().clone()));
      const oResumed = make(resumed);
      oResumed.loadStateDict(sd);
      for (let k = 3; k < 6; k++) {
        setGrads(resumed, k);
        oResumed.step();
      }
      resumed.forEach((p, i) => assert.equal(values(p), values(whole[i]), `param ${i}`));
      for (const [i, p] of resumed.entries()) {
        const a = oResumed.state.get(p) as Record<string, fl.Tensor | number>;
        const b = oWhole.state.get(whole[i]) as Record<string, fl.Tensor | number>;
        assert.equal(Object.keys(a).sort(), Object.keys(b).sort());
        for (const k of Object.keys(a))
          if (typeof a[k] === 'number') assert.is(a[k], b[k], k);
          else assert.equal(values(a[k] as fl.Tensor), values(b[k] as fl.Tensor), `state ${k} of param ${i}`);
      }
    });

for (const dtype of ['bf16', 'f16'] as const)
  test(`RMSprop and Adagrad on ${dtype} params train f32 masters exactly as f32 params; the param is the rounded master`, () => {
    // Values exactly representable in bf16 and f16, so the f32 run sees the same numbers.
    const grid = (n: number, seed: number) => Array.from({ length: n }, (_, i) => (((i * 37 + seed * 11) % 29) - 14) / 64);
    for (const [name, make] of CONFIGS) {
      const lo = new fl.nn.Parameter(fl.tensor(grid(70, 1)).to(dtype));
      const hi = new fl.nn.Parameter(fl.tensor(grid(70, 1)));
      const oLo = make([lo]);
      const oHi = make([hi]);
      for (let s = 0; s < 3; s++) {
        lo.grad = fl.tensor(grid(70, s + 2)).to(dtype);
        hi.grad = fl.tensor(grid(70, s + 2));
        oLo.step();
        oHi.step();
      }
      const st = oLo.state.get(lo) as Record<string, fl.Tensor>;
      assert.is(st.masterParam.dtype, 'f32', name);
      assert.equal(values(st.masterParam), values(hi), `${name}: master = f32 trajectory`);
      assert.equal(values(lo), values(hi.to(dtype)), `${name}: param = master rounded`);
      for (const [k, v] of Object.entries(st)) if (typeof v !== 'number') assert.is(v.dtype, 'f32', `${name} state ${k}`);
    }
  });

test('state names follow PyTorch (camelCase); momentum and centering switched on later start from zeros', () => {
  const p = new fl.nn.Parameter(fl.tensor([1, 2, 3]));
  const opt = new fl.optim.RMSprop([p], { lr: 0.1 });
  p.grad = fl.tensor([0.5, -1, 2]);
  opt.step();
  assert.equal(Object.keys(opt.stateDict().state[0]).sort(), ['squareAvg', 'step']);
  opt.paramGroups[0].momentum = 0.5;
  opt.paramGroups[0].centered = true;
  opt.step();
  assert.equal(Object.keys(opt.stateDict().state[0]).sort(), ['gradAvg', 'momentumBuffer', 'squareAvg', 'step']);
  const q = new fl.nn.Parameter(fl.tensor([1, 2]));
  const ada = new fl.optim.Adagrad([q], { initialAccumulatorValue: 0.5 });
  q.grad = fl.tensor([1, 1]);
  ada.step();
  const st = ada.stateDict().state[0];
  assert.equal(Object.keys(st).sort(), ['step', 'sum']);
  assert.equal(values(st.sum as fl.Tensor), [1.5, 1.5]);
});

test('PyTorch options flockml does not take are refused by name (ERR_ARG), never ignored; values are checked', () => {
  const p = () => [new fl.nn.Parameter(fl.zeros([2]))];
  for (const key of ['foreach', 'differentiable', 'capturable']) {
    const e = caught(() => new fl.optim.RMSprop(p(), { [key]: false } as never));
    assert.is(e.code, 'ERR_ARG');
    assert.match(e.message, new RegExp(`option '${key}' is not supported`));
  }
  throwsCode(() => new fl.optim.Adagrad(p(), { foreach: true } as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.Adagrad(p(), { lr_decay: 0.1 } as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.RMSprop(p(), { lr: -1 }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.RMSprop(p(), { alpha: -0.1 }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.RMSprop(p(), { momentum: -1 }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.RMSprop(p(), { centered: 1 } as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.Adagrad(p(), { lrDecay: -1 }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.Adagrad(p(), { initialAccumulatorValue: -1 }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.Adagrad(p(), { eps: 'x' } as never), 'ERR_ARG');
  const opt = new fl.optim.Adagrad(p());
  throwsCode(
    () => opt.loadStateDict({ state: { 0: { step: 1 } }, paramGroups: [{ ...opt.stateDict().paramGroups[0] }] }),
    'ERR_STATE_DICT',
  );
  throwsCode(
    () => opt.loadStateDict({ state: { 0: { step: 1, sum: fl.zeros([3]) } }, paramGroups: [{ ...opt.stateDict().paramGroups[0] }] }),
    'ERR_SHAPE',
  );
});

test('the native steps refuse mismatched lists with coded errors, before anything runs', () => {
  const h = (ts: fl.Tensor[]) => ts.map((t) => t.handle);
  const p = fl.tensor([1, 2, 3]);
  const z = () => fl.zeros([3]);
  // centered without grad averages, momentum without buffers, a state of the wrong shape or dtype
  throwsCode(() => native.rmspropStep(h([p]), h([z()]), h([z()]), [], [], 0.1, 0.9, 1e-8, 0, 0, true, false, [], false, 0, 0), 'ERR_ARG');
  throwsCode(
    () => native.rmspropStep(h([p]), h([z()]), h([z()]), [], [], 0.1, 0.9, 1e-8, 0, 0.9, false, false, [], false, 0, 0),
    'ERR_ARG',
  );
  throwsCode(
    () => native.rmspropStep(h([p]), h([z()]), h([fl.zeros([4])]), [], [], 0.1, 0.9, 1e-8, 0, 0, false, false, [], false, 0, 0),
    'ERR_SHAPE',
  );
  throwsCode(() => native.adagradStep(h([p]), h([z()]), h([z().to('f64')]), 0.1, 0, 1e-10, 0, 1, false, [], false, 0, 0), 'ERR_SHAPE');
  // step 0: the binding's range check of integers (ERR_INDEX)
  throwsCode(() => native.adagradStep(h([p]), h([z()]), h([z()]), 0.1, 0, 1e-10, 0, 0, false, [], false, 0, 0), 'ERR_INDEX');
  throwsCode(
    () => native.adagradStep(h([p.to('bf16')]), h([z().to('bf16')]), h([z()]), 0.1, 0, 1e-10, 0, 1, false, [], false, 0, 0),
    'ERR_DTYPE',
  );
  assert.equal(values(p), [1, 2, 3]);
});

test.run();
