/**
 * Bad-input fuzzing of the public nn, functional, init and optim surface. Every argument of every
 * call is replaced, one at a time and then two at a time from a seeded generator, by values of the
 * wrong kind (undefined, null, strings, negative and fractional numbers, empty arrays, disposed
 * tensors, tensors of the wrong dtype or shape, options with unknown or ill-typed keys). Whatever
 * is thrown — at the call or at the next sync point — must be a coded flockml error whose message
 * names the user's op once and no internal op; an unknown option always throws ERR_ARG naming it
 * (ERR_STATE_DICT for an unknown entry of a state dict).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../lib';
import { mulberry32 } from '../lib/data/distributed_sampler';

const F = fl.nn.functional;
const { nn, optim } = fl;

// ---- deterministic generator -------------------------------------------------------------------

const f32 = (shape: number[]) => fl.ones(shape);
const disposed = (() => {
  const t = fl.ones([2, 3]);
  t.dispose();
  return t;
})();

/** The bad values, each with a label for failure messages. */
const BAD: Array<[string, () => unknown]> = [
  ['undefined', () => undefined],
  ['null', () => null],
  ['a string', () => 'fast'],
  ['-1', () => -1],
  ['0', () => 0],
  ['1.5', () => 1.5],
  ['NaN', () => NaN],
  ['Infinity', () => Infinity],
  ['true', () => true],
  ['[]', () => []],
  ['[1, 2, 3]', () => [1, 2, 3]],
  ['{}', () => ({})],
  ['{ bogus: 1 }', () => ({ bogus: 1 })],
  ['a function', () => () => 1],
  ['a disposed tensor', () => disposed],
  ['an i64 tensor', () => fl.tensor([1, 0, 2])],
  ['a bool tensor', () => fl.ones([2, 3]).gt(0)],
  ['a 0-d tensor', () => fl.full([], 1)],
  ['a [3] tensor', () => f32([3])],
  ['a [2, 5] tensor', () => f32([2, 5])],
  ['a [1, 1, 2, 2] tensor', () => f32([1, 1, 2, 2])],
  ['a [0, 3] tensor', () => f32([0, 3])],
  ['an f64 [2, 3] tensor', () => fl.ones([2, 3], { dtype: 'f64' })],
];

// ---- targets -----------------------------------------------------------------------------------

interface Target {
  /** Shown in failures. */
  label: string;
  /** Names a message may start with: the user's op (and the functional op a layer runs). */
  names: string[];
  /** Good arguments; a fresh set per call. */
  args: () => unknown[];
  /**
   * Which argument is an options object, its accepted keys (fuzzed one key at a time), and the
   * code of an unknown key (ERR_ARG; ERR_STATE_DICT where the object is part of a state dict).
   */
  options?: { index: number; keys: string[]; unknown?: 'ERR_STATE_DICT' };
  call: (...a: unknown[]) => unknown;
}

const targets: Target[] = [];
type Fn = (...a: never[]) => unknown;
function add(label: string, names: string[], args: () => unknown[], call: Fn, options?: Target['options']): void {
  targets.push({ label, names, args, call: call as (...a: unknown[]) => unknown, options });
}

const x4 = () => fl.randn([2, 2, 5, 5]);
const logits = () => fl.randn([3, 4]);
const classes = () => fl.tensor([1, 0, 3]);
const POOL = ['stride', 'padding', 'dilation', 'ceilMode'];
const AVG = ['stride', 'padding', 'ceilMode', 'countIncludePad'];
const CONV = ['stride', 'padding', 'dilation', 'groups'];
const LAYER_CONV = [...CONV, 'bias', 'paddingMode', 'dtype', 'device'];

// nn.functional
add('F.linear', ['linear'], () => [f32([2, 3]), f32([4, 3]), f32([4]), {}], F.linear, { index: 3, keys: ['activation'] });
add('F.dropout', ['dropout'], () => [f32([2, 3]), 0.5, true], F.dropout);
add('F.embedding', ['embedding'], () => [fl.tensor([1, 4]), f32([5, 3])], F.embedding);
add('F.conv2d', ['conv2d'], () => [x4(), f32([3, 2, 3, 3]), f32([3]), {}], F.conv2d, { index: 3, keys: CONV });
add('F.convTranspose2d', ['convTranspose2d'], () => [x4(), f32([2, 3, 3, 3]), f32([3]), {}], F.convTranspose2d, {
  index: 3,
  keys: [...CONV, 'outputPadding'],
});
add('F.maxPool2d', ['maxPool2d'], () => [x4(), 2, {}], F.maxPool2d, { index: 2, keys: POOL });
add('F.maxPool2dWithIndices', ['maxPool2dWithIndices'], () => [x4(), 2, {}], F.maxPool2dWithIndices, { index: 2, keys: POOL });
add('F.avgPool2d', ['avgPool2d'], () => [x4(), 2, {}], F.avgPool2d, { index: 2, keys: AVG });
add('F.adaptiveAvgPool2d', ['adaptiveAvgPool2d'], () => [x4(), 2], F.adaptiveAvgPool2d);
add('F.batchNorm', ['batchNorm'], () => [f32([4, 3]), fl.zeros([3]), fl.ones([3]), { training: true }], F.batchNorm, {
  index: 3,
  keys: ['weight', 'bias', 'training', 'momentum', 'eps'],
});
add('F.layerNorm', ['layerNorm'], () => [f32([2, 3]), [3], f32([3]), f32([3]), 1e-5], F.layerNorm);
add('F.groupNorm', ['groupNorm'], () => [f32([2, 4, 3]), 2, f32([4]), f32([4]), 1e-5], F.groupNorm);
add('F.crossEntropy', ['crossEntropy'], () => [logits(), classes(), {}], F.crossEntropy, {
  index: 2,
  keys: ['reduction', 'weight', 'ignoreIndex', 'labelSmoothing'],
});
add('F.nllLoss', ['nllLoss'], () => [logits().logSoftmax(1), classes(), {}], F.nllLoss, {
  index: 2,
  keys: ['reduction', 'weight', 'ignoreIndex'],
});
add('F.mseLoss', ['mseLoss'], () => [f32([2, 3]), f32([2, 3]), {}], F.mseLoss, { index: 2, keys: ['reduction'] });
add('F.l1Loss', ['l1Loss'], () => [f32([2, 3]), f32([2, 3]), {}], F.l1Loss, { index: 2, keys: ['reduction'] });
add('F.smoothL1Loss', ['smoothL1Loss'], () => [f32([2, 3]), f32([2, 3]), {}], F.smoothL1Loss, { index: 2, keys: ['reduction', 'beta'] });
add(
  'F.binaryCrossEntropyWithLogits',
  ['binaryCrossEntropyWithLogits'],
  () => [f32([2, 3]), f32([2, 3]), {}],
  F.binaryCrossEntropyWithLogits,
  { index: 2, keys: ['reduction', 'weight', 'posWeight'] },
);
for (const name of ['relu', 'gelu', 'silu', 'tanh', 'sigmoid'] as const) add(`F.${name}`, [name], () => [f32([2, 3])], F[name]);
add('F.leakyRelu', ['leakyRelu'], () => [f32([2, 3]), 0.1], F.leakyRelu);
add('F.softmax', ['softmax'], () => [f32([2, 3]), 1], F.softmax);
add('F.logSoftmax', ['logSoftmax'], () => [f32([2, 3]), 1], F.logSoftmax);

// nn module constructors, then forward on a good module
function layer(
  name: string,
  fnName: string[],
  ctorArgs: () => unknown[],
  make: (...a: never[]) => fl.nn.Module,
  input: () => unknown[],
  options?: Target['options'],
): void {
  add(`new nn.${name}`, [name], ctorArgs, make, options);
  add(`nn.${name}.forward`, [name, ...fnName], input, (...a: unknown[]) => {
    const m = make(...(ctorArgs() as never[])) as unknown as { forward(...a: unknown[]): unknown };
    return m.forward(...a);
  });
}
const mk =
  <A extends unknown[]>(C: new (...a: A) => fl.nn.Module) =>
  (...a: A) =>
    new C(...a);
layer(
  'Linear',
  ['linear'],
  () => [3, 4, {}],
  mk(nn.Linear),
  () => [f32([2, 3])],
  { index: 2, keys: ['bias', 'dtype', 'device'] },
);
layer(
  'Conv2d',
  ['conv2d'],
  () => [2, 3, 3, {}],
  mk(nn.Conv2d),
  () => [x4()],
  { index: 3, keys: LAYER_CONV },
);
layer(
  'Conv2d',
  ['conv2d'],
  () => [2, 3, 3, { padding: 1, paddingMode: 'reflect' }],
  mk(nn.Conv2d),
  () => [x4()],
);
layer(
  'ConvTranspose2d',
  ['convTranspose2d'],
  () => [2, 3, 3, {}],
  mk(nn.ConvTranspose2d),
  () => [x4()],
  { index: 3, keys: [...LAYER_CONV, 'outputPadding'] },
);
layer(
  'MaxPool2d',
  [],
  () => [2, {}],
  mk(nn.MaxPool2d),
  () => [x4()],
  { index: 1, keys: POOL },
);
layer(
  'AvgPool2d',
  [],
  () => [2, {}],
  mk(nn.AvgPool2d),
  () => [x4()],
  { index: 1, keys: AVG },
);
layer(
  'AdaptiveAvgPool2d',
  [],
  () => [2],
  mk(nn.AdaptiveAvgPool2d),
  () => [x4()],
);
layer(
  'BatchNorm1d',
  [],
  () => [3, {}],
  mk(nn.BatchNorm1d),
  () => [f32([4, 3])],
  { index: 1, keys: ['eps', 'momentum', 'affine', 'trackRunningStats', 'dtype', 'device'] },
);
layer(
  'BatchNorm2d',
  [],
  () => [2, { momentum: null }],
  mk(nn.BatchNorm2d),
  () => [x4()],
  { index: 1, keys: ['eps', 'momentum', 'affine', 'trackRunningStats', 'dtype', 'device'] },
);
layer(
  'LayerNorm',
  [],
  () => [[3], {}],
  mk(nn.LayerNorm),
  () => [f32([2, 3])],
  { index: 1, keys: ['eps', 'affine', 'elementwiseAffine', 'bias', 'dtype', 'device'] },
);
layer(
  'GroupNorm',
  [],
  () => [2, 4, {}],
  mk(nn.GroupNorm),
  () => [f32([2, 4, 3])],
  { index: 2, keys: ['eps', 'affine', 'dtype', 'device'] },
);
layer(
  'Embedding',
  ['embedding'],
  () => [5, 3, {}],
  mk(nn.Embedding),
  () => [fl.tensor([1, 4])],
  { index: 2, keys: ['paddingIdx', 'dtype', 'device'] },
);
layer(
  'Dropout',
  ['dropout'],
  () => [0.5],
  mk(nn.Dropout),
  () => [f32([2, 3])],
);
layer(
  'ReLU',
  ['relu'],
  () => [],
  mk(nn.ReLU),
  () => [f32([2, 3])],
);
layer(
  'LeakyReLU',
  ['leakyRelu'],
  () => [0.1],
  mk(nn.LeakyReLU),
  () => [f32([2, 3])],
);
layer(
  'GELU',
  ['gelu'],
  () => ['tanh'],
  mk(nn.GELU),
  () => [f32([2, 3])],
);
layer(
  'Softmax',
  ['softmax'],
  () => [1],
  mk(nn.Softmax),
  () => [f32([2, 3])],
);
layer(
  'LogSoftmax',
  ['logSoftmax'],
  () => [1],
  mk(nn.LogSoftmax),
  () => [f32([2, 3])],
);
layer(
  'Flatten',
  ['flatten'],
  () => [1, -1],
  mk(nn.Flatten),
  () => [f32([2, 3, 2])],
);
layer(
  'CrossEntropyLoss',
  [],
  () => [{}],
  mk(nn.CrossEntropyLoss),
  () => [logits(), classes()],
  { index: 0, keys: ['reduction', 'weight', 'ignoreIndex', 'labelSmoothing'] },
);
layer(
  'NLLLoss',
  [],
  () => [{}],
  mk(nn.NLLLoss),
  () => [logits(), classes()],
  { index: 0, keys: ['reduction', 'weight', 'ignoreIndex'] },
);
layer(
  'MSELoss',
  ['mseLoss'],
  () => [{}],
  mk(nn.MSELoss),
  () => [f32([2, 3]), f32([2, 3])],
  { index: 0, keys: ['reduction'] },
);
layer(
  'L1Loss',
  ['l1Loss'],
  () => [{}],
  mk(nn.L1Loss),
  () => [f32([2, 3]), f32([2, 3])],
  { index: 0, keys: ['reduction'] },
);
layer(
  'SmoothL1Loss',
  ['smoothL1Loss'],
  () => [{}],
  mk(nn.SmoothL1Loss),
  () => [f32([2, 3]), f32([2, 3])],
  { index: 0, keys: ['reduction', 'beta'] },
);
layer(
  'BCEWithLogitsLoss',
  ['binaryCrossEntropyWithLogits'],
  () => [{}],
  mk(nn.BCEWithLogitsLoss),
  () => [f32([2, 3]), f32([2, 3])],
  { index: 0, keys: ['reduction', 'weight', 'posWeight'] },
);
add(
  'new nn.Sequential',
  ['Sequential'],
  () => [new nn.ReLU()],
  (...m: never[]) => new nn.Sequential(...m),
);
add('new nn.ModuleList', ['ModuleList', 'ModuleList.push'], () => [[new nn.ReLU()]], mk(nn.ModuleList));
add('new nn.ModuleDict', ['ModuleDict', 'ModuleDict.set'], () => [{ a: new nn.ReLU() }], mk(nn.ModuleDict));

// Module.loadStateDict
const net = () => new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4));
add(
  'Module.loadStateDict',
  ['Sequential.loadStateDict'],
  () => [net().stateDict(), {}],
  (sd: never, o: never) => net().loadStateDict(sd, o),
  { index: 1, keys: ['strict'] },
);
add(
  'Module.loadStateDict (entries)',
  ['Sequential.loadStateDict'],
  () => [f32([4, 3])],
  (w: never) => net().loadStateDict({ ...net().stateDict(), '0.weight': w }),
);

// init
const weight = () => fl.zeros([4, 3]);
for (const name of ['uniform_', 'normal_', 'constant_', 'zeros_', 'ones_', 'xavierUniform_', 'xavierNormal_'] as const) {
  const good: Record<string, () => unknown[]> = {
    uniform_: () => [weight(), -1, 1],
    normal_: () => [weight(), 0, 1],
    constant_: () => [weight(), 2],
    zeros_: () => [weight()],
    ones_: () => [weight()],
    xavierUniform_: () => [weight(), 1],
    xavierNormal_: () => [weight(), 1],
  };
  add(`init.${name}`, [name], good[name], nn.init[name] as Fn);
}
add('init.kaimingUniform_', ['kaimingUniform_'], () => [weight(), {}], nn.init.kaimingUniform_, {
  index: 1,
  keys: ['a', 'mode', 'nonlinearity'],
});
add('init.kaimingNormal_', ['kaimingNormal_'], () => [weight(), {}], nn.init.kaimingNormal_, {
  index: 1,
  keys: ['a', 'mode', 'nonlinearity'],
});
add('init.calculateGain', ['calculateGain'], () => ['leaky_relu', 0.2], nn.init.calculateGain);
add('init.fans', ['fans'], () => [weight()], nn.init.fans);

// optim
const param = () => {
  const p = new nn.Parameter(fl.ones([2, 3]));
  p.grad = fl.ones([2, 3]);
  return p;
};
const SGD_KEYS = ['lr', 'momentum', 'dampening', 'weightDecay', 'nesterov', 'maximize'];
const ADAM_KEYS = ['lr', 'betas', 'eps', 'weightDecay', 'amsgrad', 'maximize'];
add('new optim.SGD', ['SGD'], () => [[param()], { lr: 0.1, momentum: 0.9 }], mk(optim.SGD as never), { index: 1, keys: SGD_KEYS });
add('new optim.Adam', ['Adam'], () => [[param()], { amsgrad: true }], mk(optim.Adam as never), { index: 1, keys: ADAM_KEYS });
add('new optim.AdamW', ['AdamW'], () => [[param()], {}], mk(optim.AdamW as never), { index: 1, keys: ADAM_KEYS });
add(
  'optim.SGD param group',
  ['SGD'],
  () => [{ params: [param()], lr: 0.1 }],
  (g: never) => new optim.SGD([g]),
  { index: 0, keys: ['params', ...SGD_KEYS] },
);
add(
  'Adam.addParamGroup',
  ['Adam'],
  () => [{ params: [param()] }],
  (g: never) => new optim.Adam([param()]).addParamGroup(g),
  { index: 0, keys: ['params', ...ADAM_KEYS] },
);
add(
  'Adam.step after a bad hyper-parameter edit',
  ['Adam.step'],
  () => [0.1, [0.9, 0.99]],
  (lr: never, betas: never) => {
    const o = new optim.Adam([param()], { amsgrad: true });
    Object.assign(o.paramGroups[0], { lr, betas });
    o.step();
  },
);
function trained(): [fl.optim.Adam, fl.optim.OptimizerStateDict] {
  const o = new optim.Adam([param(), param()]);
  o.step();
  return [o, o.stateDict()];
}
add(
  'Adam.loadStateDict',
  ['Adam.loadStateDict'],
  () => [trained()[1]],
  (sd: never) => trained()[0].loadStateDict(sd),
);
add(
  'Adam.loadStateDict (groups)',
  ['Adam.loadStateDict'],
  () => [trained()[1].paramGroups],
  (g: never) => {
    const [o, sd] = trained();
    o.loadStateDict({ ...sd, paramGroups: g });
  },
);
add(
  'Adam.loadStateDict (a group)',
  ['Adam.loadStateDict'],
  () => [trained()[1].paramGroups[0]],
  (g: never) => {
    const [o, sd] = trained();
    o.loadStateDict({ ...sd, paramGroups: [g] });
  },
  { index: 0, keys: ['params', ...ADAM_KEYS], unknown: 'ERR_STATE_DICT' },
);
add(
  'Adam.loadStateDict (state entry)',
  ['Adam.loadStateDict'],
  () => [trained()[1].state[1]],
  (s: never) => {
    const [o, sd] = trained();
    o.loadStateDict({ ...sd, state: { ...sd.state, 1: s } });
  },
  { index: 0, keys: ['step', 'expAvg', 'expAvgSq', 'maxExpAvgSq'], unknown: 'ERR_STATE_DICT' },
);
const sgd = () => new optim.SGD([param()], { lr: 1 });
add('new optim.StepLR', ['StepLR'], () => [sgd(), 2, 0.5], mk(optim.StepLR as never));
add('new optim.MultiStepLR', ['MultiStepLR'], () => [sgd(), [2, 3], 0.5], mk(optim.MultiStepLR as never));
add('new optim.ExponentialLR', ['ExponentialLR'], () => [sgd(), 0.5], mk(optim.ExponentialLR as never));
add('new optim.CosineAnnealingLR', ['CosineAnnealingLR'], () => [sgd(), 10, 0], mk(optim.CosineAnnealingLR as never));
add('new optim.LinearWarmup', ['LinearWarmup'], () => [sgd(), 5, 0.5, 1], mk(optim.LinearWarmup as never));
add('new optim.ChainedScheduler', ['ChainedScheduler'], () => [[new optim.StepLR(sgd(), 2)]], mk(optim.ChainedScheduler as never));
add(
  'StepLR.loadStateDict',
  ['StepLR.loadStateDict'],
  () => [{ lastEpoch: 3, baseLrs: [1] }],
  (s: never) => new optim.StepLR(sgd(), 2).loadStateDict(s),
  { index: 0, keys: ['lastEpoch', 'baseLrs'], unknown: 'ERR_STATE_DICT' },
);
add('optim.clipGradNorm_', ['clipGradNorm_'], () => [[param()], 1, 2], optim.clipGradNorm_);
add('optim.clipGradValue_', ['clipGradValue_'], () => [[param()], 1], optim.clipGradValue_);
add('optim.gradNorm', ['gradNorm'], () => [[param()], 2], optim.gradNorm);

// ---- checks ------------------------------------------------------------------------------------

/** Ops that are ours but never the user's: a message naming one leaks an implementation detail. */
const INTERNAL =
  /\b(layerNormBackward|adamStep|sgdStep|conv2dBackwardInput|conv2dBackwardWeight|biasAct|clipByNorm)\b|Cannot read prop|is not a function|is not iterable|undefined is not|of undefined|of null/;

interface Outcome {
  calls: number;
  threw: number;
  paths: Set<string>;
  broken: string[];
}

function check(t: Target, what: string, e: unknown, out: Outcome, stage: string): void {
  out.threw++;
  const msg = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: string })?.code;
  const problems: string[] = [];
  if (!fl.errors.isFlockError(e)) problems.push('not a flockml error');
  if (!code) problems.push('no code');
  const name = t.names.find((n) => msg.startsWith(`${n}: `));
  if (!name) problems.push(`does not start with ${t.names.map((n) => `'${n}: '`).join(' or ')}`);
  else if (msg.startsWith(`${name}: ${name}:`)) problems.push('names the op twice');
  const leak = INTERNAL.exec(msg);
  if (leak) problems.push(`leaks '${leak[0]}'`);
  if (t.names.some((n) => /^[A-Z]/.test(n)) && /^(full|zeros|ones|rand|randn|indexSelect): /.test(msg))
    problems.push('names an internal op');
  if (t.names.includes('embedding') && /indexSelect/.test(msg)) problems.push("leaks 'indexSelect'");
  if (problems.length)
    out.broken.push(`${t.label}(${what}) ${stage}: ${problems.join(', ')} — ${e instanceof Error ? e.constructor.name : typeof e}: ${msg}`);
  out.paths.add(`${t.label}|${code}|${msg.replace(/-?\d+(\.\d+)?(e-?\d+)?/g, '#').replace(/"[^"]*"|'[^']*'/g, 'S')}`);
}

function run(t: Target, args: unknown[], what: string, out: Outcome, mustThrow?: (e: unknown) => boolean): void {
  out.calls++;
  let r: unknown;
  try {
    r = t.call(...args);
  } catch (e) {
    check(t, what, e, out, 'throws');
    if (mustThrow && !mustThrow(e)) out.broken.push(`${t.label}(${what}): wrong error — ${(e as Error).message}`);
    return;
  }
  if (mustThrow) out.broken.push(`${t.label}(${what}): accepted`);
  // Errors found while the work runs (an index out of range) surface at the sync point.
  const outs = (Array.isArray(r) ? r : [r]).filter((v): v is fl.Tensor => v instanceof fl.Tensor);
  for (const y of outs) {
    try {
      y.dataSync();
    } catch (e) {
      check(t, what, e, out, 'at sync');
    }
  }
}

function fuzz(): Outcome {
  const out: Outcome = { calls: 0, threw: 0, paths: new Set(), broken: [] };
  fl.manualSeed(1);
  for (const t of targets) {
    const n = t.args().length;
    // One argument at a time: every position (and one past the end) against every bad value.
    for (let i = 0; i < Math.max(n, 1); i++)
      for (const [label, make] of BAD) {
        const args = t.args();
        args[i] = make();
        run(t, args, `arg ${i} = ${label}`, out);
      }
    // One option at a time, and an unknown one.
    if (t.options) {
      for (const key of [...t.options.keys, 'bogusOption'])
        for (const [label, make] of BAD) {
          const args = t.args();
          args[t.options.index] = { ...(args[t.options.index] as object), [key]: make() };
          // An unknown option is never ignored: ERR_ARG naming it, whatever its value.
          const unknown =
            key === 'bogusOption'
              ? (e: unknown) =>
                  (e as { code?: string }).code === (t.options?.unknown ?? 'ERR_ARG') && (e as Error).message.includes("'bogusOption'")
              : undefined;
          run(t, args, `options.${key} = ${label}`, out, unknown);
        }
    }
  }
  // Two arguments at a time, drawn from a seeded generator.
  const rnd = mulberry32(0xf1ed);
  for (let k = 0; k < 1500; k++) {
    const t = targets[Math.floor(rnd() * targets.length)];
    const args = t.args();
    const picks: string[] = [];
    const first = Math.floor(rnd() * Math.max(args.length, 1));
    for (let j = 0; j < 2; j++) {
      // Two different positions when there are two.
      const i = j === 0 || args.length < 2 ? first : (first + 1 + Math.floor(rnd() * (args.length - 1))) % args.length;
      const [label, make] = BAD[Math.floor(rnd() * BAD.length)];
      args[i] = make();
      picks.push(`arg ${i} = ${label}`);
    }
    run(t, args, picks.join(', '), out);
  }
  return out;
}

test('every bad input to nn, functional, init and optim throws a coded error naming the op once', () => {
  const started = Date.now();
  const out = fl.tidy(() => fuzz());
  const seconds = (Date.now() - started) / 1000;
  console.log(
    `fuzz: ${out.calls} calls, ${out.threw} errors, ${out.paths.size} distinct error paths, ${out.broken.length} broken, ${seconds.toFixed(1)} s`,
  );
  if (out.broken.length) {
    const shown = [...new Set(out.broken)].slice(0, 400);
    assert.unreachable(`${out.broken.length} bad errors, e.g.:\n${shown.join('\n')}`);
  }
});

test('run-time index errors name the user op: embedding, nllLoss, crossEntropy', () => {
  const cases: Array<[string, () => fl.Tensor]> = [
    ['embedding', () => F.embedding(fl.tensor([1, 7], { dtype: 'i64' }), fl.ones([5, 3]))],
    ['Embedding', () => new nn.Embedding(5, 3).forward(fl.tensor([1, 7], { dtype: 'i64' }))],
    ['nllLoss', () => F.nllLoss(fl.zeros([2, 3]), fl.tensor([1, 5], { dtype: 'i64' }))],
    ['crossEntropy', () => F.crossEntropy(fl.zeros([2, 3]), fl.tensor([1, 5], { dtype: 'i64' }))],
    ['crossEntropy', () => F.crossEntropy(fl.zeros([2, 3]), fl.tensor([1, 5], { dtype: 'i64' }), { weight: fl.ones([3]) })],
  ];
  for (const [name, make] of cases) {
    const op = name === 'Embedding' ? 'embedding' : name;
    try {
      make().dataSync();
      assert.unreachable(`${name}: no error`);
    } catch (e) {
      const msg = (e as Error).message;
      assert.ok(fl.errors.isFlockError(e), `${name}: ${msg}`);
      assert.is((e as { code?: string }).code, 'ERR_INDEX', msg);
      assert.ok(msg.startsWith(`${op}: `) && !msg.startsWith(`${op}: ${op}:`), msg);
      assert.not.match(msg, /indexSelect|gather/);
    }
  }
});

test.run();
