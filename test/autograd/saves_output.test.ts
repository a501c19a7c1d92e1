/**
 * Which ops count their output as saved for backward (lib/dispatch/record.ts, `savesOutput`): an op
 * whose gradient never reads its output lets that output be modified in place afterwards, with the
 * gradients it would give a clone (as PyTorch, where add, mm, linear, sum... save no result); an op
 * that reads it (softmax, linear with relu, norm, ...) refuses backward, naming itself and the write.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import type { Tensor } from '../../lib/index';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';
import { rnd } from '../helpers/gradcheck';

fl.setCpuDeviceCount(2); // before any tensor: `to` moves to cpu:1

const F = fl.nn.functional;
const i64 = (v: number[] | number[][]): Tensor => fl.tensor(v, { dtype: 'i64' });
const rnd32 = (shape: number[]): Tensor => fl.randn(shape, { dtype: 'f32' });

/** The tensor in `t`'s history (`t` included) that the node named `op` made. */
function madeBy(t: Tensor, op: string): Tensor {
  const seen = new Set<Tensor>();
  const stack = [t];
  while (stack.length > 0) {
    const u = stack.pop()!;
    if (u.gradFn?.name === op) return u;
    if (seen.has(u)) continue;
    seen.add(u);
    stack.push(...(u.gradFn?.inputs ?? []));
  }
  throw new Error(`no ${op} node in the history`);
}

type Edit = (t: Tensor) => Tensor;
const double: Edit = (t) => t.mul_(2);
const plusOne: Edit = (t) => t.add_(1);

/**
 * The gradients of every floating input of sum(edit(o)), where o is what node `op` made in f's
 * output: edited itself, or (`viaClone`) a clone of it.
 */
function gradsAfterEdit(f: (xs: Tensor[]) => Tensor, op: string, inputs: Tensor[], edit: Edit, viaClone: boolean): (number[] | null)[] {
  const xs = inputs.map((v) => (fl.isFloating(v.dtype) ? v.clone().requiresGrad_() : v));
  const own = madeBy(f(xs), op);
  edit(viaClone ? own.clone() : own)
    .sum()
    .backward();
  return xs.map((x) => (fl.isFloating(x.dtype) ? values(x.grad!) : null));
}

interface Case {
  name: string;
  /** The node whose output is edited. */
  op: string;
  f: (xs: Tensor[]) => Tensor;
  inputs: () => Tensor[];
  edit?: Edit;
}

/** Editing `op`'s output in place keeps backward working, with the gradients of editing a clone. */
function checkEditable(c: Case): void {
  fl.manualSeed(7);
  const inputs = c.inputs();
  const edit = c.edit ?? double;
  const got = gradsAfterEdit(c.f, c.op, inputs, edit, false);
  const want = gradsAfterEdit(c.f, c.op, inputs, edit, true);
  const tol = inputs.some((v) => v.dtype === 'f32') ? 1e-6 : 1e-12;
  got.forEach((g, i) => {
    if (want[i] === null) return;
    assert.ok(g !== null, `${c.name}: input ${i} has a gradient`);
    close(g, want[i]!, tol, tol, `${c.name} input ${i}`);
  });
}

function expectSavedOutput(fn: () => unknown, op: string, write: string): void {
  expectError(fn, Error, 'ERR_AUTOGRAD', new RegExp(`saved by ${op} for backward was modified in place by ${write} \\(output`));
}

// ---- ops whose gradient never reads their output ----

test('nn.Linear: its output may be modified in place (with and without bias)', () => {
  for (const bias of [true, false]) {
    fl.manualSeed(1);
    const l = new fl.nn.Linear(4, 3, { bias });
    const x = fl.randn([2, 4]);
    const y = l.forward(x).mul_(2);
    y.sum().backward();
    const gw = values(l.weight.grad!);
    const gb = bias ? values(l.bias!.grad!) : null;
    l.zeroGrad();
    l.forward(x).clone().mul_(2).sum().backward();
    close(gw, values(l.weight.grad!), 1e-6, 1e-6, `bias ${bias}: weight`);
    if (gb) close(gb, values(l.bias!.grad!), 1e-6, 1e-6, 'bias');
  }
});

test('functional linear: activations none and gelu (with and without bias), 2-D and 3-D input', () => {
  for (const activation of ['none', 'gelu', 'gelu_tanh', 'silu', 'tanh', 'sigmoid'] as const) {
    checkEditable({
      name: `linear ${activation}`,
      op: 'linear',
      f: ([x, w, b]) => F.linear(x, w, b, { activation }),
      inputs: () => [rnd([3, 4]), rnd([5, 4]), rnd([5])],
    });
    checkEditable({
      name: `linear ${activation}, 3-D input`,
      op: 'linear',
      f: ([x, w, b]) => F.linear(x, w, b, { activation }),
      inputs: () => [rnd([2, 3, 4]), rnd([5, 4]), rnd([5])],
      edit: plusOne,
    });
  }
  for (const [activation, op] of [
    ['none', 'matmul'],
    ['gelu', 'gelu'],
  ] as const)
    checkEditable({
      name: `linear ${activation} without bias`,
      op,
      f: ([x, w]) => F.linear(x, w, null, { activation }),
      inputs: () => [rnd([3, 4]), rnd([5, 4])],
    });
});

test('addmm and baddbmm: output editable, for any beta and alpha', () => {
  for (const options of [undefined, { beta: 0.5, alpha: -2 }, { beta: 0 }]) {
    checkEditable({
      name: `addmm ${JSON.stringify(options)}`,
      op: 'addmm',
      f: ([i, a, b]) => fl.addmm(i, a, b, options),
      inputs: () => [rnd([3]), rnd([2, 4]), rnd([4, 3])],
    });
    checkEditable({
      name: `baddbmm ${JSON.stringify(options)}`,
      op: 'baddbmm',
      f: ([i, a, b]) => fl.baddbmm(i, a, b, options),
      inputs: () => [rnd([2, 1, 3]), rnd([2, 2, 4]), rnd([2, 4, 3])],
      edit: plusOne,
    });
  }
});

test('reductions: sum, mean, max along a dim, prod, var', () => {
  const cases: Case[] = [
    { name: 'sum', op: 'sum', f: ([x]) => fl.sum(x, 1), inputs: () => [rnd([3, 4])] },
    { name: 'sum all', op: 'sum', f: ([x]) => fl.sum(x), inputs: () => [rnd([3, 4])] },
    { name: 'mean', op: 'mean', f: ([x]) => fl.mean(x, [0], true), inputs: () => [rnd([3, 4])] },
    { name: 'max along a dim', op: 'max', f: ([x]) => fl.max(x, 1).values, inputs: () => [rnd([3, 4])] },
    { name: 'min along a dim', op: 'min', f: ([x]) => fl.min(x, 0, true).values, inputs: () => [rnd([3, 4])] },
    { name: 'prod', op: 'prod', f: ([x]) => fl.prod(x, 1), inputs: () => [rnd([3, 4], { positive: true })] },
    { name: 'var', op: 'var', f: ([x]) => fl.var(x, 1), inputs: () => [rnd([3, 4])] },
  ];
  cases.forEach(checkEditable);
});

test('element-wise: pow with a number exponent, where, to another device', () => {
  const cases: Case[] = [
    { name: 'pow', op: 'pow', f: ([x]) => fl.pow(x, 3), inputs: () => [rnd([5])] },
    { name: 'where', op: 'where', f: ([a, b]) => fl.where(fl.gt(a, b), a, b), inputs: () => [rnd([2, 3]), rnd([3])] },
    { name: 'to cpu:1', op: 'to', f: ([x]) => fl.to(x, 'cpu:1'), inputs: () => [rnd([2, 3])] },
  ];
  cases.forEach(checkEditable);
});

test('shape ops: expand, narrow (a copy), cat', () => {
  const cases: Case[] = [
    { name: 'expand', op: 'expand', f: ([x]) => fl.expand(x, [3, 4]), inputs: () => [rnd([1, 4])] },
    { name: 'narrow', op: 'narrow', f: ([x]) => fl.narrow(x, 1, 1, 2), inputs: () => [rnd([3, 4])] },
    { name: 'cat', op: 'cat', f: ([a, b]) => fl.cat([a, b], 1), inputs: () => [rnd([2, 3]), rnd([2, 1])] },
  ];
  cases.forEach(checkEditable);
});

test('rearranging: tril, triu, flip, roll', () => {
  const cases: Case[] = [
    { name: 'tril', op: 'tril', f: ([x]) => fl.tril(x), inputs: () => [rnd([3, 3])] },
    { name: 'triu', op: 'triu', f: ([x]) => fl.triu(x, 1), inputs: () => [rnd([3, 4])] },
    { name: 'flip', op: 'flip', f: ([x]) => fl.flip(x, [0, 1]), inputs: () => [rnd([3, 4])] },
    { name: 'roll', op: 'roll', f: ([x]) => fl.roll(x, [1, -1], [0, 1]), inputs: () => [rnd([3, 4])] },
  ];
  cases.forEach(checkEditable);
});

test('indexing: indexSelect, gather, scatterAdd, indexAdd, scatter, scatterReduce sum and mean, maskedSelect', () => {
  const idx = () =>
    i64([
      [0, 2],
      [1, 1],
    ]);
  const cases: Case[] = [
    { name: 'indexSelect', op: 'indexSelect', f: ([x]) => fl.indexSelect(x, 0, i64([2, 0, 2])), inputs: () => [rnd([3, 4])] },
    { name: 'gather', op: 'gather', f: ([x]) => fl.gather(x, 1, idx()), inputs: () => [rnd([2, 3])] },
    {
      name: 'scatterAdd',
      op: 'scatterAdd',
      f: ([x, s]) => fl.scatterAdd(x, 1, idx(), s),
      inputs: () => [rnd([2, 3]), rnd([2, 2])],
    },
    {
      name: 'indexAdd',
      op: 'indexAdd',
      f: ([x, s]) => fl.indexAdd(x, 0, i64([1, 0]), s, { alpha: 2 }),
      inputs: () => [rnd([3, 2]), rnd([2, 2])],
    },
    { name: 'scatter number', op: 'scatter', f: ([x]) => fl.scatter(x, 1, idx(), 5), inputs: () => [rnd([2, 3])] },
    { name: 'scatter', op: 'scatter', f: ([x, s]) => fl.scatter(x, 1, idx(), s), inputs: () => [rnd([2, 3]), rnd([2, 2])] },
    ...(['sum', 'mean'] as const).flatMap((reduce) =>
      [true, false].map(
        (includeSelf): Case => ({
          name: `scatterReduce ${reduce} includeSelf ${includeSelf}`,
          op: 'scatterReduce',
          f: ([x, s]) => fl.scatterReduce(x, 1, idx(), s, reduce, { includeSelf }),
          inputs: () => [rnd([2, 3]), rnd([2, 2])],
        }),
      ),
    ),
    {
      name: 'maskedSelect',
      op: 'maskedSelect',
      f: ([x]) => fl.maskedSelect(x, fl.tensor([true, false, true], { dtype: 'bool' })),
      inputs: () => [rnd([2, 3])],
    },
  ];
  cases.forEach(checkEditable);
});

test('sort, topk, cumsum, cumprod', () => {
  const cases: Case[] = [
    { name: 'sort', op: 'sort', f: ([x]) => fl.sort(x, 1, true).values, inputs: () => [rnd([3, 4])] },
    { name: 'topk', op: 'topk', f: ([x]) => fl.topk(x, 2, 0).values, inputs: () => [rnd([3, 4])] },
    { name: 'cumsum', op: 'cumsum', f: ([x]) => fl.cumsum(x, 1), inputs: () => [rnd([3, 4])] },
    { name: 'cumprod', op: 'cumprod', f: ([x]) => fl.cumprod(x, 0), inputs: () => [rnd([3, 4])] },
  ];
  cases.forEach(checkEditable);
});

test('nn.functional: embedding, crossEntropy, nllLoss, layerNorm, conv2d, convTranspose2d, pooling', () => {
  const cases: Case[] = [
    {
      name: 'embedding',
      op: 'embedding',
      f: ([w]) =>
        F.embedding(
          i64([
            [1, 3],
            [3, 0],
          ]),
          w,
        ),
      inputs: () => [rnd([4, 3])],
    },
    {
      name: 'crossEntropy',
      op: 'crossEntropy',
      f: ([x]) => F.crossEntropy(x, i64([2, 0, 1]), { reduction: 'none', labelSmoothing: 0.1 }),
      inputs: () => [rnd([3, 4])],
    },
    { name: 'nllLoss', op: 'nllLoss', f: ([x]) => F.nllLoss(x, i64([2, 0, 1])), inputs: () => [rnd([3, 4])] },
    {
      name: 'layerNorm',
      op: 'layerNorm',
      f: ([x, w, b]) => F.layerNorm(x, 4, w, b),
      inputs: () => [rnd([3, 4]), rnd([4]), rnd([4])],
    },
    {
      name: 'conv2d',
      op: 'conv2d',
      f: ([x, w, b]) => F.conv2d(x, w, b, { padding: 1 }),
      inputs: () => [rnd32([1, 2, 4, 4]), rnd32([3, 2, 3, 3]), rnd32([3])],
    },
    {
      name: 'convTranspose2d',
      op: 'convTranspose2d',
      f: ([x, w]) => F.convTranspose2d(x, w, null, { stride: 2 }),
      inputs: () => [rnd32([1, 2, 3, 3]), rnd32([2, 3, 2, 2])],
    },
    { name: 'maxPool2d', op: 'maxPool2d', f: ([x]) => F.maxPool2d(x, 2), inputs: () => [rnd32([1, 2, 4, 4])] },
    { name: 'avgPool2d', op: 'avgPool2d', f: ([x]) => F.avgPool2d(x, 2), inputs: () => [rnd32([1, 2, 4, 4])] },
    {
      name: 'adaptiveAvgPool2d',
      op: 'adaptiveAvgPool2d',
      f: ([x]) => F.adaptiveAvgPool2d(x, [3, 2]),
      inputs: () => [rnd32([1, 2, 5, 4])],
    },
  ];
  cases.forEach(checkEditable);
});

test('unary ops (exp, sigmoid, tanh, relu) take their derivative from the input: their output stays editable', () => {
  for (const op of ['exp', 'sigmoid', 'tanh', 'relu'] as const)
    checkEditable({ name: op, op, f: ([x]) => x[op](), inputs: () => [rnd([5])] });
});

// ---- ops whose gradient reads their output ----

test('ops that read their output refuse backward once it is modified in place, naming the op and the write', () => {
  const x = () => rnd([2, 3]).requiresGrad_();
  expectSavedOutput(() => x().softmax(-1).mul_(2).sum().backward(), 'softmax', 'mul_');
  expectSavedOutput(() => x().logSoftmax(1).add_(1).sum().backward(), 'logSoftmax', 'add_');
  expectSavedOutput(
    () =>
      F.linear(x(), rnd([4, 3]), rnd([4]), { activation: 'relu' })
        .mul_(2)
        .sum()
        .backward(),
    'linear',
    'mul_',
  );
  expectSavedOutput(() => fl.norm(x()).mul_(2).backward(), 'norm', 'mul_');
  expectSavedOutput(() => fl.std(x(), 1).mul_(2).sum().backward(), 'std', 'mul_');
  expectSavedOutput(() => fl.logsumexp(x(), 1).add_(1).sum().backward(), 'logsumexp', 'add_');
  expectSavedOutput(() => fl.max(x(), [1]).mul_(2).sum().backward(), 'max', 'mul_');
  expectSavedOutput(() => fl.pow(x().abs(), x()).mul_(2).sum().backward(), 'pow', 'mul_');
  for (const reduce of ['amax', 'amin', 'prod'] as const)
    expectSavedOutput(
      () =>
        fl
          .scatterReduce(x(), 1, i64([[0], [2]]), x(), reduce)
          .mul_(2)
          .sum()
          .backward(),
      'scatterReduce',
      'mul_',
    );
  const q = () => rnd([1, 3, 2]).requiresGrad_();
  expectSavedOutput(() => F.scaledDotProductAttention(q(), q(), q()).mul_(2).sum().backward(), 'scaledDotProductAttention', 'mul_');
});

test('a write through a view of an op output still counts against the op: views share the version counter', () => {
  // narrow over dim 1 of [1, 6] is a view of h; editing it under noGrad bumps h's counter, which
  // narrow saved as its input.
  const h = rnd([1, 6]).requiresGrad_().mul(1);
  const v = fl.narrow(h, 1, 0, 3);
  fl.noGrad(() => v.mul_(2));
  expectError(() => v.sum().backward(), Error, 'ERR_AUTOGRAD', /saved by narrow for backward was modified in place by mul_ \(input 0/);
  // Under autograd, writing into the view is refused outright.
  const w = fl.narrow(rnd([1, 6]).requiresGrad_().mul(1), 1, 0, 3);
  expectError(() => w.mul_(2), Error, 'ERR_AUTOGRAD', /writing in place into a view/);
});

test('index tensors an op reads in backward are saved: writing one in place makes backward throw, naming the op', () => {
  const cases: { op: string; run: (x: Tensor, index: Tensor) => Tensor; index: () => Tensor }[] = [
    { op: 'indexSelect', run: (x, i) => fl.indexSelect(x, 0, i), index: () => i64([2, 0]) },
    { op: 'gather', run: (x, i) => fl.gather(x, 1, i), index: () => i64([[0], [1], [2]]) },
    { op: 'scatterAdd', run: (x, i) => fl.scatterAdd(x, 1, i, x.narrow(1, 0, 1)), index: () => i64([[0], [1], [2]]) },
    { op: 'indexAdd', run: (x, i) => fl.indexAdd(x, 0, i, x.narrow(0, 0, 2)), index: () => i64([1, 0]) },
    { op: 'scatter', run: (x, i) => fl.scatter(x, 1, i, 0.5), index: () => i64([[0], [1], [2]]) },
    { op: 'scatterReduce', run: (x, i) => fl.scatterReduce(x, 1, i, x.narrow(1, 0, 1), 'sum'), index: () => i64([[0], [1], [2]]) },
    { op: 'embedding', run: (x, i) => F.embedding(i, x), index: () => i64([2, 0, 1]) },
    { op: 'crossEntropy', run: (x, i) => F.crossEntropy(x, i), index: () => i64([3, 0, 1]) },
  ];
  for (const { op, run, index } of cases) {
    const x = rnd32([3, 4]).requiresGrad_();
    const i = index();
    const y = run(x, i);
    i.mul_(0);
    expectError(() => y.sum().backward(), Error, 'ERR_AUTOGRAD', new RegExp(`${op} .*modified in place by mul_ \\(index`));
    // Left alone, the same graph runs.
    const x2 = rnd32([3, 4]).requiresGrad_();
    run(x2, index()).sum().backward();
    assert.ok(x2.grad, `${op}: gradient without the write`);
  }
  // Indices an op returns are what its values' backward reads (max along a dim, sort, topk).
  for (const [op, pick] of [
    ['max', (x: Tensor) => fl.max(x, 1)],
    ['sort', (x: Tensor) => fl.sort(x, 1)],
    ['topk', (x: Tensor) => fl.topk(x, 2, 1)],
  ] as const) {
    const x = rnd32([3, 4]).requiresGrad_();
    const { values, indices } = pick(x);
    indices.add_(1);
    expectError(() => values.sum().backward(), Error, 'ERR_AUTOGRAD', new RegExp(`${op} .*modified in place by add_`));
  }
});

test.run();
