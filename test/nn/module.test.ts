import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { inspect } from 'node:util';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';

const { nn } = fl;

class Net extends nn.Module {
  fc1 = new nn.Linear(4, 3);
  act = new nn.ReLU();
  head = new nn.Sequential(new nn.Linear(3, 2), new nn.Dropout(0.5));
  scale = new nn.Parameter(fl.ones([1]));
  forward(x: fl.Tensor): fl.Tensor {
    return this.head.forward(this.act.forward(this.fc1.forward(x))).mul(this.scale);
  }
}

test('named parameters: own first, then sub-modules in field order (as PyTorch)', () => {
  const net = new Net();
  assert.equal(
    Array.from(net.namedParameters(), ([k]) => k),
    ['scale', 'fc1.weight', 'fc1.bias', 'head.0.weight', 'head.0.bias'],
  );
  assert.equal(
    Array.from(net.namedModules(), ([k]) => k),
    ['', 'fc1', 'act', 'head', 'head.0', 'head.1'],
  );
  assert.is([...net.children()].length, 3);
  assert.is(net.parameters().length, 5);
});

test('train/eval switch every module; apply visits all', () => {
  const net = new Net().eval();
  assert.ok([...net.modules()].every((m) => !m.training));
  const x = fl.ones([2, 4]);
  assert.equal(net.forward(x).toArray(), net.forward(x).toArray());
  let count = 0;
  net.apply(() => count++);
  assert.is(count, 6);
});

test('backward fills gradients; zeroGrad and requiresGrad_(false)', () => {
  const net = new Net().eval();
  net
    .forward(fl.ones([2, 4]))
    .sum()
    .backward();
  assert.ok(net.parameters().every((p) => p.grad !== null));
  net.zeroGrad();
  assert.ok(net.parameters().every((p) => p.grad === null));
  net.requiresGrad_(false);
  assert.ok(net.parameters().every((p) => !p.requiresGrad));
});

test('stateDict / loadStateDict round-trip and report bad keys and shapes', () => {
  const a = new Net(),
    b = new Net();
  b.loadStateDict(a.stateDict());
  assert.equal(b.fc1.weight.toArray(), a.fc1.weight.toArray());
  const sd = a.stateDict();
  const { scale: _s, ...missing } = sd;
  throwsCode(() => b.loadStateDict(missing), 'ERR_STATE_DICT');
  throwsCode(() => b.loadStateDict({ ...sd, extra: fl.ones([1]) }), 'ERR_STATE_DICT');
  throwsCode(() => b.loadStateDict({ ...sd, 'fc1.bias': fl.ones([4]) }), 'ERR_SHAPE');
  const r = b.loadStateDict(missing, { strict: false });
  assert.equal(r.missingKeys, ['scale']);
  try {
    b.loadStateDict(missing);
  } catch (e) {
    assert.match((e as Error).message, /missing keys: scale/);
  }
});

test('to(dtype) casts parameters in place, keeping their identity and values; containers index and list', () => {
  const net = new Net();
  const before = net.parameters();
  const values = before.map((p) => Array.from(p.dataSync() as Float32Array));
  const opt = new fl.optim.SGD(before, { lr: 0.5 });
  assert.is(net.to('f64'), net);
  const after = net.parameters();
  assert.ok(after.every((p, i) => p === before[i] && p.dtype === 'f64' && p instanceof nn.Parameter && p.requiresGrad));
  after.forEach((p, i) => assert.equal(Array.from(p.dataSync() as Float64Array), values[i].map(Number)));
  // The optimizer built before the move updates the moved weights.
  net.eval();
  net
    .forward(fl.ones([1, 4], { dtype: 'f64' }))
    .sum()
    .backward();
  opt.step();
  assert.ok(after.some((p, i) => (p.dataSync() as Float64Array).some((v, j) => v !== values[i][j])));
  const seq = new nn.Sequential(new nn.Identity(), new nn.Tanh());
  assert.is(seq.length, 2);
  assert.instance(seq.at(-1), nn.Tanh);
  const list = new nn.ModuleList([new nn.Linear(2, 2)]).push(new nn.Linear(2, 1));
  assert.is(list.parameters().length, 4);
  const dict = new nn.ModuleDict({ enc: new nn.Linear(2, 2) });
  assert.equal(Object.keys(dict.stateDict()), ['enc.weight', 'enc.bias']);
  throwsCode(() => new nn.Sequential({} as fl.nn.Module), 'ERR_ARG', TypeError);
});

test('activations, dropout and embedding', () => {
  const x = fl.tensor([-1, 0, 2], { dtype: 'f32' });
  assert.equal(new nn.ReLU().forward(x).toArray(), [0, 0, 2]);
  assert.equal(new nn.LeakyReLU(0.5).forward(x).toArray(), [-0.5, 0, 2]);
  assert.ok(Math.abs(new nn.Softmax().forward(x).sum().itemSync() - 1) < 1e-6);
  assert.equal([...new nn.Flatten().forward(fl.zeros([2, 3, 4])).shape], [2, 12]);
  fl.manualSeed(5);
  const d = new nn.Dropout(0.5).forward(fl.ones([1000])).dataSync() as Float32Array;
  const kept = d.filter((v) => v !== 0);
  assert.ok(kept.every((v) => v === 2) && kept.length > 400 && kept.length < 600);
  const emb = new nn.Embedding(10, 3);
  const out = emb.forward(
    fl.tensor(
      [
        [1, 2],
        [3, 1],
      ],
      { dtype: 'i64' },
    ),
  );
  assert.equal([...out.shape], [2, 2, 3]);
  out.sum().backward();
  assert.equal(((emb.weight.grad as fl.Tensor).toArray() as number[][])[1], [2, 2, 2]);
  const padded = new nn.Embedding(4, 2, { paddingIdx: 0 });
  assert.equal((padded.weight.toArray() as number[][])[0], [0, 0]);
  padded
    .forward(fl.tensor([0, 1, 0], { dtype: 'i64' }))
    .sum()
    .backward();
  assert.equal((padded.weight.grad as fl.Tensor).toArray(), [
    [0, 0],
    [1, 1],
    [0, 0],
    [0, 0],
  ]);
});

test('init helpers follow PyTorch formulas', () => {
  const w = fl.zeros([64, 32]);
  fl.nn.init.xavierUniform_(w);
  const a = Math.sqrt(6 / 96);
  assert.ok((w.dataSync() as Float32Array).every((v) => Math.abs(v) <= a));
  fl.nn.init.constant_(w, 3);
  assert.is(w.dataSync()[5], 3);
  assert.ok(Math.abs(fl.nn.init.calculateGain('leaky_relu', Math.sqrt(5)) - Math.sqrt(2 / 6)) < 1e-12);
});

test('loadStateDict is atomic: a late bad entry leaves every parameter and buffer as it was', () => {
  const m = new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4), new nn.Linear(4, 2));
  const snapshot = () =>
    Object.fromEntries(
      Object.entries(m.stateDict()).map(([k, v]) => [k, JSON.stringify(v.toArray(), (_, x) => (typeof x === 'bigint' ? String(x) : x))]),
    );
  const before = snapshot();
  const other = new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4), new nn.Linear(4, 2));
  const sd = { ...other.stateDict() };
  sd['2.bias'] = fl.zeros([3]); // the last key in order
  throwsCode(() => m.loadStateDict(sd), 'ERR_SHAPE');
  assert.equal(snapshot(), before);
  sd['2.bias'] = 'weights' as never;
  throwsCode(() => m.loadStateDict(sd), 'ERR_ARG');
  sd['2.bias'] = fl.zeros([2], { dtype: 'i64' });
  throwsCode(() => m.loadStateDict(sd), 'ERR_DTYPE');
  assert.equal(snapshot(), before);
  throwsCode(() => m.loadStateDict(null as never), 'ERR_ARG');
  throwsCode(() => m.loadStateDict({}, { strict: 'no' as never }), 'ERR_ARG');
  throwsCode(() => m.loadStateDict({}, { strikt: false } as never), 'ERR_ARG');
  m.loadStateDict(other.stateDict());
  assert.equal(snapshot()['0.weight'], JSON.stringify(other.stateDict()['0.weight'].toArray()));
});

test("console.log(model) / util.inspect print the module tree in PyTorch's words, not fields and weights", () => {
  const model = new fl.nn.Sequential(
    new fl.nn.Conv2d(1, 8, 3, { padding: 1, bias: false }),
    new fl.nn.BatchNorm2d(8),
    new fl.nn.ReLU(),
    new fl.nn.MaxPool2d(2),
    new fl.nn.Flatten(),
    new fl.nn.Linear(4, 3),
    new fl.nn.LayerNorm(3),
    new fl.nn.Dropout(0.1),
    new fl.nn.GELU('tanh'),
    new fl.nn.Embedding(10, 3, { paddingIdx: 0 }),
    new fl.nn.GroupNorm(2, 8),
    new fl.nn.AdaptiveAvgPool2d([1, 1]),
    new fl.nn.ConvTranspose2d(8, 4, 2, { stride: 2 }),
  );
  const expected = [
    'Sequential(',
    '  (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)',
    '  (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)',
    '  (2): ReLU()',
    '  (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)',
    '  (4): Flatten(start_dim=1, end_dim=-1)',
    '  (5): Linear(in_features=4, out_features=3, bias=True)',
    '  (6): LayerNorm((3,), eps=1e-05, elementwise_affine=True)',
    '  (7): Dropout(p=0.1, inplace=False)',
    "  (8): GELU(approximate='tanh')",
    '  (9): Embedding(10, 3, padding_idx=0)',
    '  (10): GroupNorm(2, 8, eps=1e-05, affine=True)',
    '  (11): AdaptiveAvgPool2d(output_size=(1, 1))',
    '  (12): ConvTranspose2d(8, 4, kernel_size=(2, 2), stride=(2, 2))',
    ')',
  ].join('\n');
  assert.is(inspect(model), expected);
  assert.is(String(model), expected);
  const nested = inspect({ model: new fl.nn.Sequential(new fl.nn.Linear(2, 2)) });
  assert.not.match(nested, /_buffers|weight|Float32Array/);
  assert.is(inspect(new fl.nn.Dropout(0)), 'Dropout(p=0.0, inplace=False)');
  assert.is(inspect(new fl.nn.LeakyReLU(1.5e-7)), 'LeakyReLU(negative_slope=1.5e-07)');
});

test.run();
