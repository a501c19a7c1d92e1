import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { throwsCode } from '../fixtures/load';

const nn = fl.nn;

class Net extends nn.Module {
  conv = new nn.Conv1d(3, 8, 3, { padding: 1 });
  pool = new nn.MaxPool1d(2);
  body = new nn.Sequential(new nn.Linear(64, 32), new nn.ReLU(), new nn.Sequential(new nn.Linear(32, 16), new nn.Tanh()));
  head = new nn.Linear(16, 10);
  forward(x: fl.Tensor): fl.Tensor {
    return this.head.forward(this.body.forward(this.pool.forward(this.conv.forward(x)).flatten(1)));
  }
}

test('numParameters counts elements, shared parameters once; trainableOnly skips frozen ones', () => {
  const net = new Net();
  const total = 8 * 3 * 3 + 8 + 64 * 32 + 32 + 32 * 16 + 16 + 16 * 10 + 10;
  assert.is(net.numParameters(), total);
  net.head.requiresGrad_(false);
  assert.is(net.numParameters({ trainableOnly: true }), total - 170);
  const lin = new nn.Linear(3, 3);
  assert.is(new nn.Sequential(lin, lin).numParameters(), 12);
  assert.is(new nn.ReLU().numParameters(), 0);
  throwsCode(() => net.numParameters({ trainable: true } as never), 'ERR_ARG');
  throwsCode(() => net.numParameters({ trainableOnly: 'yes' as never }), 'ERR_ARG');
});

test('summary: the rows of one forward pass, in call order, with output shapes and parameter counts', () => {
  const net = new Net();
  net.head.requiresGrad_(false);
  const s = fl.utils.summary(net, [2, 3, 16], { print: false });
  assert.equal(
    s.layers.map((l) => [l.name, l.type, l.index, l.outputShape, l.numParams]),
    [
      ['', 'Net', '0-1', [2, 10], net.numParameters()],
      ['conv', 'Conv1d', '1-1', [2, 8, 16], 80],
      ['pool', 'MaxPool1d', '1-2', [2, 8, 8], 0],
      ['body', 'Sequential', '1-3', [2, 16], 2080 + 528],
      ['body.0', 'Linear', '2-1', [2, 32], 2080],
      ['body.1', 'ReLU', '2-2', [2, 32], 0],
      ['body.2', 'Sequential', '2-3', [2, 16], 528],
      ['body.2.0', 'Linear', '3-1', [2, 16], 528],
      ['body.2.1', 'Tanh', '3-2', [2, 16], 0],
      ['head', 'Linear', '1-4', [2, 10], 170],
    ],
  );
  assert.is(s.totalParams, net.numParameters());
  assert.is(s.trainableParams, s.totalParams - 170);
  assert.is(s.nonTrainableParams, 170);
  assert.is(s.multAdds, 2 * 16 * 8 * 9 + 2 * 32 * 64 + 2 * 16 * 32 + 2 * 10 * 16);
  assert.is(s.inputBytes, 2 * 3 * 16 * 4);
  assert.is(s.paramBytes, s.totalParams * 4);
  assert.is(s.totalBytes, s.inputBytes + s.forwardBackwardBytes + s.paramBytes);
});

test("summary prints torchinfo's table", () => {
  const model = new nn.Sequential(new nn.Linear(4, 20), new nn.ReLU(), new nn.Linear(20, 10));
  const lines: string[] = [];
  const log = console.log;
  console.log = (s: string) => lines.push(s);
  let s: fl.utils.ModelSummary;
  try {
    s = fl.utils.summary(model, fl.randn([1, 4]));
  } finally {
    console.log = log;
  }
  assert.is(lines.join('\n'), s.text);
  const rule = '='.repeat(90);
  assert.is(
    s.text,
    [
      rule,
      'Layer (type:depth-idx)                   Output Shape              Param #',
      rule,
      'Sequential                               [1, 10]                   --',
      '├─Linear: 1-1                            [1, 20]                   100',
      '├─ReLU: 1-2                              [1, 20]                   --',
      '├─Linear: 1-3                            [1, 10]                   210',
      rule,
      'Total params: 310',
      'Trainable params: 310',
      'Non-trainable params: 0',
      'Total mult-adds (M): 0.00',
      rule,
      'Input size (MB): 0.00',
      'Forward/backward pass size (MB): 0.00',
      'Params size (MB): 0.00',
      'Estimated Total Size (MB): 0.00',
      rule,
    ].join('\n'),
  );
});

test('summary folds rows deeper than depth into their ancestor, nests with │ and └─', () => {
  const net = new Net();
  const deep = fl.utils.summary(net, [1, 3, 16], { print: false });
  assert.match(deep.text, /\n│ {4}└─Sequential: 2-3 +\[1, 16\] +--\n│ {4}│ {4}└─Linear: 3-1 +\[1, 16\] +528\n/);
  const shallow = fl.utils.summary(net, [1, 3, 16], { print: false, depth: 1 });
  assert.match(shallow.text, /\n├─Sequential: 1-3 +\[1, 16\] +2,608\n├─Linear: 1-4/);
  assert.not.match(shallow.text, /2-1/);
});

test('summary leaves the model as it was: modes and forward methods restored, no autograd', () => {
  const model = new nn.Sequential(new nn.Linear(4, 4), new nn.Dropout(0.5), new nn.BatchNorm1d(4));
  const before = [...model.buffers()].map((b) => Array.from(b.dataSync() as Float32Array));
  fl.utils.summary(model, [8, 4], { print: false });
  assert.ok([...model.modules()].every((m) => m.training));
  assert.ok([...model.modules()].every((m) => !Object.hasOwn(m, 'forward')));
  // Run in eval mode: BatchNorm's running statistics are not updated.
  assert.equal(
    [...model.buffers()].map((b) => Array.from(b.dataSync() as Float32Array)),
    before,
  );
  model.eval();
  fl.utils.summary(model, [fl.randn([2, 4])], { print: false });
  assert.ok([...model.modules()].every((m) => !m.training));
});

test('summary takes shapes, several inputs and integer dtypes; refuses anything else', () => {
  const emb = new nn.Embedding(10, 3);
  const s = fl.utils.summary(emb, [2, 5], { dtype: 'i64', print: false });
  assert.equal(s.layers[0].outputShape, [2, 5, 3]);
  class Two extends nn.Module {
    forward(a: fl.Tensor, b: fl.Tensor): [fl.Tensor, fl.Tensor] {
      return [a.add(b), a.sub(b)];
    }
  }
  const two = fl.utils.summary(
    new Two(),
    [
      [2, 3],
      [2, 3],
    ],
    { print: false },
  );
  assert.equal(two.layers[0].outputShape, [
    [2, 3],
    [2, 3],
  ]);
  throwsCode(() => fl.utils.summary({} as never, [1]), 'ERR_ARG');
  throwsCode(() => fl.utils.summary(emb, 'x' as never), 'ERR_ARG');
  throwsCode(() => fl.utils.summary(emb, [2, 5], { verbose: 0 } as never), 'ERR_ARG');
  throwsCode(() => fl.utils.summary(emb, [2, 5], { depth: -1 }), 'ERR_RANGE');
});

test.run();
