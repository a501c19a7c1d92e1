import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';
import { caught } from '../helpers/errors';
import { close } from '../helpers/reference';

function opt(lr = 1): fl.optim.SGD {
  return new fl.optim.SGD([new fl.nn.Parameter(fl.zeros([1]))], { lr });
}

function run(s: { step(): void; getLastLr(): number[] }, n: number): number[] {
  const out = [s.getLastLr()[0]];
  for (let i = 0; i < n; i++) {
    s.step();
    out.push(s.getLastLr()[0]);
  }
  return out;
}

test('StepLR, MultiStepLR, ExponentialLR', () => {
  close(run(new fl.optim.StepLR(opt(), 2, 0.5), 4), [1, 1, 0.5, 0.5, 0.25], 0, 1e-9);
  close(run(new fl.optim.MultiStepLR(opt(), [1, 3], 0.1), 3), [1, 0.1, 0.1, 0.01], 0, 1e-9);
  close(run(new fl.optim.ExponentialLR(opt(), 0.9), 2), [1, 0.9, 0.81], 0, 1e-9);
});

test('CosineAnnealingLR follows the closed form', () => {
  const lrs = run(new fl.optim.CosineAnnealingLR(opt(), 4, 0.1), 4);
  close(
    lrs,
    [0, 1, 2, 3, 4].map((e) => 0.1 + (0.9 * (1 + Math.cos((Math.PI * e) / 4))) / 2),
    0,
    1e-9,
  );
});

test('LinearWarmup and ChainedScheduler', () => {
  close(run(new fl.optim.LinearWarmup(opt(), 4, 0.25), 5), [0.25, 0.4375, 0.625, 0.8125, 1, 1], 0, 1e-9);
  const o = opt();
  const chain = new fl.optim.ChainedScheduler([new fl.optim.LinearWarmup(o, 2, 0.5), new fl.optim.ExponentialLR(o, 0.5)]);
  close(run(chain, 2), [0.5, 0.375, 0.25], 0, 1e-9);
});

test("schedulers take an options object as PyTorch's keyword arguments, and the positional form still works", () => {
  close(run(new fl.optim.StepLR(opt(), { stepSize: 2, gamma: 0.5 }), 4), [1, 1, 0.5, 0.5, 0.25], 0, 1e-9);
  close(run(new fl.optim.StepLR(opt(), 2, { gamma: 0.5 }), 4), [1, 1, 0.5, 0.5, 0.25], 0, 1e-9);
  close(run(new fl.optim.StepLR(opt(), { stepSize: 2 }), 2), [1, 1, 0.1], 0, 1e-9);
  close(run(new fl.optim.MultiStepLR(opt(), { milestones: [1, 3], gamma: 0.1 }), 3), [1, 0.1, 0.1, 0.01], 0, 1e-9);
  close(run(new fl.optim.ExponentialLR(opt(), { gamma: 0.9 }), 2), [1, 0.9, 0.81], 0, 1e-9);
  const cos = (s: fl.optim.CosineAnnealingLR) => run(s, 4);
  close(
    cos(new fl.optim.CosineAnnealingLR(opt(), { tMax: 4, etaMin: 0.1 })),
    cos(new fl.optim.CosineAnnealingLR(opt(), 4, 0.1)),
    0,
    1e-9,
    "the options form's cosine lrs",
    false,
  );
  close(
    run(new fl.optim.LinearWarmup(opt(), { totalIters: 2, startFactor: 0.5 }), 3),
    run(new fl.optim.LinearWarmup(opt(), 2, 0.5), 3),
    0,
    1e-9,
    "the options form's warmup lrs",
    false,
  );
  assert.is(new fl.optim.StepLR(opt(), { stepSize: 3, gamma: 0.5 }).stateDict().stepSize, 3);
  const refused = (fn: () => unknown, pattern: RegExp) => {
    const e = caught(fn);
    assert.is(e.code, 'ERR_ARG', e.message);
    assert.match(e.message, pattern);
  };
  refused(() => new fl.optim.StepLR(opt(), { step_size: 10 } as never), /unknown option 'step_size' \(did you mean 'stepSize'\?\)/);
  refused(() => new fl.optim.StepLR(opt(), 2, { stepSize: 3 } as never), /stepSize is given twice/);
  refused(() => new fl.optim.StepLR(opt(), { gamma: 0.5 } as never), /stepSize must be/);
  refused(() => new (fl.optim.StepLR as unknown as new (...a: unknown[]) => unknown)(opt(), { stepSize: 2 }, 0.5), /must come last/);
  throwsCode(() => new fl.optim.StepLR(opt(), { stepSize: 0 }), 'ERR_RANGE');
});

test('scheduler arguments and state dicts are checked', () => {
  throwsCode(() => new fl.optim.StepLR(opt(), 0), 'ERR_RANGE');
  throwsCode(() => new fl.optim.StepLR({} as never, 2), 'ERR_ARG');
  throwsCode(() => new fl.optim.ExponentialLR(opt(), 'x' as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.MultiStepLR(opt(), 3 as never), 'ERR_ARG');
  throwsCode(() => new fl.optim.LinearWarmup(opt(), 5, 0), 'ERR_RANGE');
  throwsCode(() => new fl.optim.ChainedScheduler([new fl.optim.StepLR(opt(), 2), new fl.optim.StepLR(opt(), 2)]), 'ERR_ARG');
  const s = new fl.optim.StepLR(opt(), 2);
  throwsCode(() => s.loadStateDict({ lastEpoch: -1 }), 'ERR_STATE_DICT');
  throwsCode(() => s.loadStateDict(null as never), 'ERR_ARG');
  throwsCode(() => s.loadStateDict({ lastEpoch: 1, baseLrs: [1, 2] }), 'ERR_STATE_DICT');
  assert.is(s.lastEpoch, 0);
});

test('a scheduler state with a late bad entry changes nothing', () => {
  const s = new fl.optim.StepLR(opt(), 2, 0.5);
  s.step();
  const before = JSON.stringify(s.stateDict());
  const bad = { ...s.stateDict(), lastEpoch: 7, gamma: 'half' } as never;
  throwsCode(() => s.loadStateDict(bad), 'ERR_STATE_DICT');
  throwsCode(() => s.loadStateDict({ ...s.stateDict(), lastEpoch: 7, bogus: 1 } as never), 'ERR_STATE_DICT');
  assert.is(JSON.stringify(s.stateDict()), before);
});

test.run();
