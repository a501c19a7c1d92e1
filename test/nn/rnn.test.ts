import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { type FixtureTensor, close, load, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;

interface RnnCase {
  kind: 'RNN' | 'LSTM' | 'GRU' | 'RNNCell' | 'LSTMCell' | 'GRUCell';
  options: Record<string, unknown>;
  inputSize: number;
  hiddenSize: number;
  stateDict: Record<string, FixtureTensor>;
  input: FixtureTensor;
  states: FixtureTensor[];
  outputs: FixtureTensor[];
  gys: FixtureTensor[];
  gradInput: FixtureTensor;
  gradStates: FixtureTensor[];
  gradParams: Record<string, FixtureTensor>;
}

const { cases } = JSON.parse(readFileSync(join(__dirname, '../fixtures/rnn_fixtures.json'), 'utf8')) as { cases: Record<string, RnnCase> };

type AnyRnn = fl.nn.RNN | fl.nn.LSTM | fl.nn.GRU | fl.nn.RNNCell | fl.nn.LSTMCell | fl.nn.GRUCell;

function build(c: RnnCase, dtype: fl.DType): AnyRnn {
  const o = { ...c.options, dtype };
  switch (c.kind) {
    case 'RNN':
      return new fl.nn.RNN(c.inputSize, c.hiddenSize, o);
    case 'LSTM':
      return new fl.nn.LSTM(c.inputSize, c.hiddenSize, o);
    case 'GRU':
      return new fl.nn.GRU(c.inputSize, c.hiddenSize, o);
    case 'RNNCell':
      return new fl.nn.RNNCell(c.inputSize, c.hiddenSize, o);
    case 'LSTMCell':
      return new fl.nn.LSTMCell(c.inputSize, c.hiddenSize, o);
    default:
      return new fl.nn.GRUCell(c.inputSize, c.hiddenSize, o);
  }
}

/** The layer's outputs in the fixture's order: [output, hN(, cN)] or the cell's [h'(, c')]. */
function call(m: AnyRnn, x: fl.Tensor, s: fl.Tensor[]): fl.Tensor[] {
  if (m instanceof fl.nn.LSTM) {
    const [out, [h, c]] = m.forward(x, s.length ? [s[0], s[1]] : null);
    return [out, h, c];
  }
  if (m instanceof fl.nn.LSTMCell) return m.forward(x, s.length ? [s[0], s[1]] : null);
  if (m instanceof fl.nn.RNN || m instanceof fl.nn.GRU) return m.forward(x, s[0] ?? null);
  return [m.forward(x, s[0] ?? null)];
}

function checkAgainstTorch(name: string, dtype: fl.DType, tol: number): void {
  const c = cases[name];
  const m = build(c, dtype);
  m.loadStateDict(Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, load(v)])));
  const x = load(c.input, dtype, true);
  const states = c.states.map((s) => load(s, dtype, true));
  const outs = call(m, x, states);
  assert.is(outs.length, c.outputs.length, `${name}: number of outputs`);
  outs.forEach((o, i) => close(o, c.outputs[i], tol, `${name} ${dtype} output ${i}`));
  let loss = outs[0].mul(load(c.gys[0], dtype)).sum();
  for (let i = 1; i < outs.length; i++) loss = loss.add(outs[i].mul(load(c.gys[i], dtype)).sum());
  loss.backward();
  close(x.grad as fl.Tensor, c.gradInput, tol, `${name} ${dtype} grad input`);
  states.forEach((s, i) => close(s.grad as fl.Tensor, c.gradStates[i], tol, `${name} ${dtype} grad state ${i}`));
  for (const [k, p] of m.namedParameters()) {
    assert.ok(p.grad, `${name}: ${k} got no gradient`);
    close(p.grad as fl.Tensor, c.gradParams[k], tol, `${name} ${dtype} grad ${k}`);
  }
}

for (const name of Object.keys(cases)) {
  test(`${name}: outputs, final states and every gradient match PyTorch in f64`, () => checkAgainstTorch(name, 'f64', 1e-9));
  test(`${name}: the same in f32`, () => checkAgainstTorch(name, 'f32', 2e-5));
}

test('parameter names, shapes and order are PyTorch state-dict keys', () => {
  for (const [name, c] of Object.entries(cases)) {
    const sd = build(c, 'f32').stateDict();
    assert.equal(Object.keys(sd), Object.keys(c.stateDict), name);
    for (const [k, v] of Object.entries(sd)) assert.equal([...v.shape], c.stateDict[k].shape, `${name} ${k}`);
  }
  const lstm = new fl.nn.LSTM(3, 4, { numLayers: 2, bidirectional: true });
  assert.equal(Object.keys(lstm.stateDict()).slice(0, 8), [
    'weight_ih_l0',
    'weight_hh_l0',
    'bias_ih_l0',
    'bias_hh_l0',
    'weight_ih_l0_reverse',
    'weight_hh_l0_reverse',
    'bias_ih_l0_reverse',
    'bias_hh_l0_reverse',
  ]);
  assert.equal([...lstm.weightsOf(1, 0)[0].shape], [16, 8]);
});

test("initialisation is PyTorch's uniform(-1/sqrt(hidden), 1/sqrt(hidden)) for every parameter", () => {
  fl.manualSeed(1);
  const k = 1 / Math.sqrt(16);
  for (const m of [new fl.nn.GRU(8, 16, { numLayers: 2 }), new fl.nn.LSTMCell(8, 16), new fl.nn.RNN(8, 16)])
    for (const p of m.parameters()) {
      const v = p.dataSync() as Float32Array;
      const max = v.reduce((a, b) => Math.max(a, Math.abs(b)), 0);
      assert.ok(max <= k && max > 0.8 * k, `max |w| ${max} vs bound ${k}`);
    }
});

test('gradients of a sequence pass an f64 finite-difference check (input, h0, c0 and W_hh)', () => {
  fl.manualSeed(4);
  for (const Cls of [fl.nn.RNN, fl.nn.GRU, fl.nn.LSTM]) {
    const m = new Cls(3, 4, { numLayers: 2, bidirectional: true, dtype: 'f64' });
    const r = fl.randn([5, 2, 8], { dtype: 'f64' });
    const rh = fl.randn([4, 2, 4], { dtype: 'f64' });
    const h0 = fl.randn([4, 2, 4], { dtype: 'f64' }).mul(0.5);
    const c0 = fl.randn([4, 2, 4], { dtype: 'f64' }).mul(0.5);
    const run = (x: fl.Tensor, h: fl.Tensor, c: fl.Tensor): fl.Tensor => {
      if (m instanceof fl.nn.LSTM) {
        const [out, [hN, cN]] = m.forward(x, [h, c]);
        return out.mul(r).sum().add(hN.mul(rh).sum()).add(cN.mul(rh).sum());
      }
      const [out, hN] = (m as fl.nn.GRU).forward(x, h);
      return out.mul(r).sum().add(hN.mul(rh).sum());
    };
    const x0 = fl.randn([5, 2, 3], { dtype: 'f64' });
    numericGradCheck((x) => run(x, h0, c0), x0);
    numericGradCheck((h) => run(x0, h, c0), h0);
    if (m instanceof fl.nn.LSTM) numericGradCheck((c) => run(x0, h0, c), c0);
  }
  // W_hh and b_hh of a cell, through the functional twins.
  const x = fl.randn([3, 4], { dtype: 'f64' });
  const h = fl.randn([3, 5], { dtype: 'f64' });
  const c = fl.randn([3, 5], { dtype: 'f64' });
  const wIh = (g: number) => fl.randn([g * 5, 4], { dtype: 'f64' }).mul(0.5);
  const r = fl.randn([3, 5], { dtype: 'f64' });
  const w3 = wIh(3),
    w4 = wIh(4),
    w1 = wIh(1);
  numericGradCheck((w) => F.gruCell(x, h, w3, w).mul(r).sum(), fl.randn([15, 5], { dtype: 'f64' }).mul(0.5));
  const wHh3 = fl.randn([15, 5], { dtype: 'f64' }).mul(0.5);
  numericGradCheck((b) => F.gruCell(x, h, w3, wHh3, null, b).mul(r).sum(), fl.randn([15], { dtype: 'f64' }));
  numericGradCheck(
    (w) => {
      const [h2, c2] = F.lstmCell(x, [h, c], w4, w);
      return h2.mul(r).sum().add(c2.mul(r).sum());
    },
    fl.randn([20, 5], { dtype: 'f64' }).mul(0.5),
  );
  numericGradCheck((w) => F.rnnTanhCell(x, h, w1, w).mul(r).sum(), fl.randn([5, 5], { dtype: 'f64' }).mul(0.5));
  numericGradCheck((w) => F.rnnReluCell(x, h, w1, w).mul(r).sum(), fl.randn([5, 5], { dtype: 'f64' }).mul(0.5));
});

test('dropout acts between layers only while training, never after the last layer', () => {
  fl.manualSeed(5);
  const x = fl.randn([6, 2, 3]);
  const m = new fl.nn.LSTM(3, 4, { numLayers: 2, dropout: 0.5 });
  const ref = new fl.nn.LSTM(3, 4, { numLayers: 2 });
  ref.loadStateDict(m.stateDict());
  m.eval();
  close(m.forward(x)[0], { shape: [6, 2, 4], data: [...(ref.forward(x)[0].dataSync() as Float32Array)] }, 0, 'eval ignores dropout');
  m.train();
  const a = m.forward(x)[0].dataSync() as Float32Array;
  const b = ref.forward(x)[0].dataSync() as Float32Array;
  assert.ok(
    a.some((v, i) => v !== b[i]),
    'training applies dropout between the layers',
  );
  // One layer: nothing to drop between.
  const one = new fl.nn.GRU(3, 4, { dropout: 0.9 });
  const [y1] = one.forward(x);
  one.eval();
  const [y2] = one.forward(x);
  assert.equal([...(y1.dataSync() as Float32Array)], [...(y2.dataSync() as Float32Array)]);
});

test('a dropout of 1 zeroes the second layer input, as PyTorch', () => {
  fl.manualSeed(6);
  const m = new fl.nn.RNN(3, 4, { numLayers: 2, dropout: 1 });
  const x = fl.randn([4, 2, 3]);
  const [out] = m.forward(x);
  // The second layer sees zeros: its output is the same for any input.
  const [out2] = m.forward(fl.randn([4, 2, 3]));
  assert.equal([...(out.dataSync() as Float32Array)], [...(out2.dataSync() as Float32Array)]);
});

test('outputs have PyTorch shapes: batchFirst, bidirectional, unbatched, cells', () => {
  const lstm = new fl.nn.LSTM(3, 5, { numLayers: 3, bidirectional: true, batchFirst: true });
  const [out, [h, c]] = lstm.forward(fl.randn([2, 7, 3]));
  assert.equal([...out.shape], [2, 7, 10]);
  assert.equal([...h.shape], [6, 2, 5]);
  assert.equal([...c.shape], [6, 2, 5]);
  const [u, hu] = new fl.nn.GRU(3, 5, { numLayers: 2 }).forward(fl.randn([7, 3]));
  assert.equal([...u.shape], [7, 5]);
  assert.equal([...hu.shape], [2, 5]);
  assert.equal([...new fl.nn.RNNCell(3, 5).forward(fl.randn([3])).shape], [5]);
  const [hc, cc] = new fl.nn.LSTMCell(3, 5).forward(fl.randn([4, 3]));
  assert.equal([...hc.shape, ...cc.shape], [4, 5, 4, 5]);
  // Without autograd nothing is kept for backward and the values are the same.
  const g = new fl.nn.GRU(3, 5);
  const x = fl.randn([4, 2, 3]);
  const a = g.forward(x)[0].dataSync() as Float32Array;
  const b = fl.noGrad(() => g.forward(x)[0]).dataSync() as Float32Array;
  assert.equal([...a], [...b]);
});

test('the last output of a forward layer is its final state; of a reverse one, the first', () => {
  fl.manualSeed(7);
  const m = new fl.nn.GRU(3, 4, { bidirectional: true, dtype: 'f64' });
  const [out, h] = m.forward(fl.randn([5, 2, 3], { dtype: 'f64' }));
  close(out.select(0, 4).narrow(1, 0, 4), { shape: [2, 4], data: [...(h.select(0, 0).dataSync() as Float64Array)] }, 0);
  close(out.select(0, 0).narrow(1, 4, 4), { shape: [2, 4], data: [...(h.select(0, 1).dataSync() as Float64Array)] }, 0);
});

test('an LSTM trains: loss falls with SGD', () => {
  fl.manualSeed(8);
  const m = new fl.nn.LSTM(2, 8, { batchFirst: true });
  const head = new fl.nn.Linear(8, 1);
  const opt = new fl.optim.SGD([...m.parameters(), ...head.parameters()], { lr: 0.5 });
  const x = fl.randn([16, 6, 2]);
  const y = x.select(2, 0).mean(1, true); // the mean of the first feature over the sequence
  let first = 0;
  let last = 0;
  for (let i = 0; i < 60; i++) {
    opt.zeroGrad();
    const [out] = m.forward(x);
    const loss = F.mseLoss(head.forward(out.select(1, -1)), y);
    loss.backward();
    opt.step();
    last = loss.itemSync() as number;
    if (i === 0) first = last;
  }
  assert.ok(last < first * 0.3, `loss ${first} -> ${last}`);
});

test('bad arguments are refused with the PyTorch condition named', () => {
  throwsCode(() => new fl.nn.LSTM(3, 4, { projSize: 2 }), 'ERR_ARG');
  throwsCode(() => new fl.nn.GRU(3, 4, { nonlinearity: 'relu' } as never), 'ERR_ARG');
  throwsCode(() => new fl.nn.RNN(3, 4, { nonlinearity: 'gelu' as never }), 'ERR_ARG');
  throwsCode(() => new fl.nn.RNN(3, 0), 'ERR_RANGE');
  throwsCode(() => new fl.nn.RNN(3, 4, { numLayers: 0 }), 'ERR_RANGE');
  throwsCode(() => new fl.nn.RNN(3, 4, { dropout: 1.5 }), 'ERR_RANGE');
  const m = new fl.nn.LSTM(3, 4, { numLayers: 2 });
  throwsCode(() => m.forward(fl.randn([2, 2, 2, 3])), 'ERR_SHAPE');
  throwsCode(() => m.forward(fl.randn([5, 2, 4])), 'ERR_SHAPE');
  throwsCode(() => m.forward(fl.randn([5, 2, 3]), [fl.zeros([2, 4]), fl.zeros([2, 4])]), 'ERR_SHAPE');
  throwsCode(() => m.forward(fl.randn([5, 2, 3]), [fl.zeros([2, 3, 4]), fl.zeros([2, 2, 4])]), 'ERR_SHAPE');
  throwsCode(() => m.forward(fl.randn([5, 2, 3], { dtype: 'f64' })), 'ERR_DTYPE');
  throwsCode(() => new fl.nn.GRUCell(3, 4).forward(fl.randn([2, 3]), fl.zeros([3, 4])), 'ERR_SHAPE');
  throwsCode(() => new fl.nn.GRUCell(3, 4).forward(fl.randn([2, 2, 3])), 'ERR_SHAPE');
  throwsCode(() => F.lstmCell(fl.randn([2, 3]), null, fl.randn([16, 3]), fl.randn([12, 4])), 'ERR_SHAPE');
});

test.run();
