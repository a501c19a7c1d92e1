import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { numericGradCheck, throwsCode } from '../fixtures/load';

const { nn } = fl;

test('Linear default init bounds and shape errors', () => {
  const lin = new nn.Linear(16, 4);
  const bound = 1 / 4;
  assert.ok((lin.weight.dataSync() as Float32Array).every((v) => Math.abs(v) <= bound + 1e-7));
  assert.ok((lin.bias!.dataSync() as Float32Array).every((v) => Math.abs(v) <= bound + 1e-7));
  assert.equal([...lin.forward(fl.zeros([2, 5, 16])).shape], [2, 5, 4]);
  throwsCode(() => lin.forward(fl.zeros([2, 15])), 'ERR_SHAPE');
});

test('linear gradients pass a numerical check in f64', () => {
  fl.manualSeed(8);
  const w = fl.randn([3, 4], { dtype: 'f64' });
  const b = fl.randn([3], { dtype: 'f64' });
  const r = fl.randn([2, 3], { dtype: 'f64' });
  numericGradCheck((x) => nn.functional.linear(x, w, b).mul(r).sum(), fl.randn([2, 4], { dtype: 'f64' }));
  const x = fl.randn([2, 4], { dtype: 'f64' });
  numericGradCheck((ww) => nn.functional.linear(x, ww, b).mul(r).sum(), w);
});

test.run();
