import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';
import { close } from '../helpers/reference';

// biome-ignore lint/suspicious/noExplicitAny: fixture cases of several shapes
const fixtures: any = JSON.parse(readFileSync(join(__dirname, '../fixtures/optim_extra_fixtures.json'), 'utf8'));

// The functions make_optim_extra_fixtures.py gave PyTorch under the same names.
const lambdas: Record<string, (e: number) => number> = {
  pow: (e) => 0.95 ** e,
  inv: (e) => 1 / (e + 1),
  warm: (e) => Math.min(1, (e + 1) / 4),
};
const scales: Record<string, (x: number) => number> = { half: (x) => 0.5 ** x, lin: (x) => 1 / (1 + 0.1 * x) };

type AnyOpt = fl.optim.SGD | fl.optim.Adam;

function optimizer(kind: string, lrs: number[], options: Record<string, number> = {}): AnyOpt {
  const groups = lrs.map((lr) => ({ params: [new fl.nn.Parameter(fl.zeros([1]))], lr }));
  return kind === 'SGD'
    ? new fl.optim.SGD(groups, { lr: lrs[0], momentum: options.momentum ?? 0.9 })
    : new fl.optim.Adam(groups, { lr: lrs[0] });
}

interface Stepper {
  step(metric?: number): void;
}

// biome-ignore lint/suspicious/noExplicitAny: the fixture's options, in flockml's names
function make(kind: string, opt: AnyOpt, options: any): Stepper {
  const o = { ...options };
  if (kind === 'LambdaLR')
    return new fl.optim.LambdaLR(opt, Array.isArray(o.lrLambda) ? o.lrLambda.map((n: string) => lambdas[n]) : lambdas[o.lrLambda]);
  if (kind === 'OneCycleLR') return new fl.optim.OneCycleLR(opt, o);
  if (kind === 'CyclicLR') {
    if (o.scaleFn) o.scaleFn = scales[o.scaleFn];
    return new fl.optim.CyclicLR(opt, o);
  }
  return new fl.optim.ReduceLROnPlateau(opt, o) as unknown as Stepper;
}

function momentumOf(opt: AnyOpt): number[] {
  return opt.paramGroups.map((g) => ('betas' in g ? g.betas[0] : (g as { momentum: number }).momentum));
}

/** Runs a fixture case: the lrs (and momenta) after construction and after each step. */
// biome-ignore lint/suspicious/noExplicitAny: a fixture case
function replay(c: any): { lr: number[][]; momentum: number[][]; opt: AnyOpt; s: Stepper } {
  const opt = optimizer(c.optimizer, c.lrs, c.optimizerOptions);
  const s = make(c.scheduler, opt, c.options);
  const lr = [opt.paramGroups.map((g) => g.lr)];
  const momentum = [momentumOf(opt)];
  for (let k = 0; k < c.lr.length - 1; k++) {
    s.step(c.metrics ? c.metrics[k] : undefined);
    lr.push(opt.paramGroups.map((g) => g.lr));
    momentum.push(momentumOf(opt));
  }
  return { lr, momentum, opt, s };
}

for (const kind of ['LambdaLR', 'OneCycleLR', 'ReduceLROnPlateau', 'CyclicLR']) {
  test(`${kind} follows PyTorch 1.13's lr (and momentum) sequence for every fixture`, () => {
    // biome-ignore lint/suspicious/noExplicitAny: fixture cases
    const cases = fixtures.schedulers.filter((c: any) => c.scheduler === kind);
    assert.ok(cases.length >= 2);
    for (const c of cases) {
      const r = replay(c);
      const name = `${kind} ${JSON.stringify(c.options)}`;
      // Row k is step k's value for each group. PyTorch's are at most 1, where 1e-12 absolute is the
      // fixtures' 1e-12·max(1, |want|).
      close(r.lr.flat(), c.lr.flat(), 0, 1e-12, `${name} lr (steps × groups)`);
      close(r.momentum.flat(), c.momentum.flat(), 0, 1e-12, `${name} momentum (steps × groups)`);
    }
  });
}

test('every scheduler resumes exactly from its state dict (through JSON, as a checkpoint stores it)', () => {
  for (const c of fixtures.schedulers) {
    const whole = replay(c);
    const half = Math.floor((c.lr.length - 1) / 2);
    const a = optimizer(c.optimizer, c.lrs, c.optimizerOptions);
    const sa = make(c.scheduler, a, c.options);
    for (let k = 0; k < half; k++) sa.step(c.metrics?.[k]);
    const saved = JSON.parse(
      JSON.stringify({ sched: (sa as unknown as fl.optim.LRScheduler).stateDict(), groups: a.stateDict().paramGroups }),
    );
    const b = optimizer(c.optimizer, c.lrs, c.optimizerOptions);
    const sb = make(c.scheduler, b, c.options);
    b.loadStateDict({ state: {}, paramGroups: saved.groups });
    (sb as unknown as fl.optim.LRScheduler).loadStateDict(saved.sched);
    for (let k = half; k < c.lr.length - 1; k++) sb.step(c.metrics?.[k]);
    assert.equal(
      b.paramGroups.map((g) => g.lr),
      whole.opt.paramGroups.map((g) => g.lr),
      `${c.scheduler} ${JSON.stringify(c.options)}`,
    );
    assert.equal(momentumOf(b), momentumOf(whole.opt));
  }
});

test("LambdaLR's state dict holds no functions (as PyTorch's); loading keeps the constructor's", () => {
  const opt = optimizer('SGD', [1, 2]);
  const s = new fl.optim.LambdaLR(opt, { lrLambda: [(e) => 0.5 ** e, (e) => 1 / (e + 1)] });
  s.step();
  const sd = s.stateDict();
  assert.ok(Object.values(sd).every((v) => typeof v !== 'function' && !(Array.isArray(v) && v.some((x) => typeof x === 'function'))));
  assert.equal(sd.lastEpoch, 1);
  assert.equal(s.getLastLr(), [0.5, 1]);
});

test('OneCycleLR cycles Adam beta1 and leaves beta2; stepping past totalSteps is ERR_RANGE', () => {
  const opt = optimizer('Adam', [0.1]) as fl.optim.Adam;
  const s = new fl.optim.OneCycleLR(opt, 0.5, { totalSteps: 4 });
  assert.is(opt.paramGroups[0].betas[0], 0.95);
  assert.is(opt.paramGroups[0].betas[1], 0.999);
  for (let i = 0; i < 4; i++) s.step();
  throwsCode(() => s.step(), 'ERR_RANGE');
  assert.is(s.lastEpoch, 4);
});

test('options are checked: unknown, missing, out of range, wrong optimizer', () => {
  const sgd = () => optimizer('SGD', [0.1]);
  throwsCode(() => new fl.optim.OneCycleLR(sgd(), { maxLr: 0.1 } as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.OneCycleLR(sgd(), { maxLr: 0.1, total_steps: 10 } as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.OneCycleLR(sgd(), { maxLr: 0.1, totalSteps: 0 }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.OneCycleLR(sgd(), { maxLr: 0.1, totalSteps: 10, annealStrategy: 'exp' as never }), 'ERR_ARG');
  throwsCode(() => new fl.optim.OneCycleLR(sgd(), { maxLr: [0.1, 0.2], totalSteps: 10 }), 'ERR_ARG');
  throwsCode(() => new fl.optim.OneCycleLR(sgd(), { maxLr: 0.1, epochs: 2 } as never), 'ERR_ARG');
  const adagrad = new fl.optim.Adagrad([new fl.nn.Parameter(fl.zeros([1]))]);
  throwsCode(() => new fl.optim.OneCycleLR(adagrad, { maxLr: 0.1, totalSteps: 10 }), 'ERR_ARG');
  new fl.optim.OneCycleLR(adagrad, { maxLr: 0.1, totalSteps: 10, cycleMomentum: false });
  throwsCode(() => new fl.optim.CyclicLR(optimizer('Adam', [0.1]), 0.01, 0.1), 'ERR_ARG');
  throwsCode(() => new fl.optim.CyclicLR(sgd(), { baseLr: 0.01, maxLr: 0.1, mode: 'exp' as never }), 'ERR_ARG');
  throwsCode(() => new fl.optim.CyclicLR(sgd(), { baseLr: 0.01, maxLr: 0.1, scaleMode: 'iterations' }), 'ERR_ARG');
  throwsCode(() => new fl.optim.CyclicLR(sgd(), { baseLr: 0.01, maxLr: 0.1, stepSizeUp: 0 }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.LambdaLR(sgd(), 3 as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.LambdaLR(sgd(), [(e: number) => e, (e: number) => e]), 'ERR_ARG');
  throwsCode(() => new fl.optim.LambdaLR(sgd(), () => 'x' as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.ReduceLROnPlateau(sgd(), { factor: 1 }), 'ERR_RANGE');
  throwsCode(() => new fl.optim.ReduceLROnPlateau(sgd(), { mode: 'lowest' as never }), 'ERR_ARG');
  throwsCode(() => new fl.optim.ReduceLROnPlateau(sgd(), { min_lr: 0 } as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.ReduceLROnPlateau({} as never), 'ERR_ARG');
  const p = new fl.optim.ReduceLROnPlateau(sgd());
  throwsCode(() => p.step(fl.tensor([1]) as never), 'ERR_ARG');
  throwsCode(() => p.step('1' as never), 'ERR_ARG');
  throwsCode(() => p.loadStateDict({ best: 'x' }), 'ERR_STATE_DICT');
  throwsCode(() => p.loadStateDict({ lastEpoch: 1, bogus: 1 }), 'ERR_STATE_DICT');
  assert.is(p.lastEpoch, 0);
});

test.run();
