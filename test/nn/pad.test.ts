import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, fixtureFile, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;
const fx = fixtureFile('first_hour').cases;

test('pad matches PyTorch in every mode (last dim first, negative pads crop), forward and backward', () => {
  const names = Object.keys(fx).filter((k) => k.startsWith('pad_'));
  assert.ok(names.length >= 11);
  for (const name of names) {
    try {
      checkCase(fx[name], ({ x }) => F.pad(x, fx[name].pad, fx[name].options));
    } catch (e) {
      throw new Error(`${name}: ${(e as Error).message}`);
    }
  }
});

test('constant pad keeps integer dtypes and pads with the value', () => {
  const y = F.pad(fl.tensor([[1, 2]], { dtype: 'i64' }), [1, 0, 0, 1], { value: 9 });
  assert.is(y.dtype, 'i64');
  assert.equal(Array.from(y.dataSync() as BigInt64Array, Number), [9, 1, 2, 9, 9, 9]);
  assert.equal([...F.pad(fl.zeros([2, 3]), [-1, -2]).shape], [2, 0]);
});

test('pad gradients pass a numerical check in f64', () => {
  fl.manualSeed(6);
  const r = fl.randn([1, 2, 6, 5], { dtype: 'f64' });
  for (const mode of ['constant', 'reflect', 'replicate', 'circular'] as const)
    numericGradCheck((x) => F.pad(x, [2, -1, 1, 2], { mode }).mul(r).sum(), fl.randn([1, 2, 3, 4], { dtype: 'f64' }));
});

test('pad: coded errors as PyTorch refuses', () => {
  const x = fl.randn([1, 2, 5]);
  throwsCode(() => F.pad(x, [1]), 'ERR_ARG');
  throwsCode(() => F.pad(x, [1.5, 1]), 'ERR_ARG');
  throwsCode(() => F.pad(x, [1, 1, 1, 1, 1, 1, 1, 1]), 'ERR_SHAPE');
  throwsCode(() => F.pad(x, [-3, -3]), 'ERR_SHAPE');
  throwsCode(() => F.pad(x, [5, 0], { mode: 'reflect' }), 'ERR_SHAPE');
  throwsCode(() => F.pad(x, [6, 0], { mode: 'circular' }), 'ERR_SHAPE');
  throwsCode(() => F.pad(x, [1, 1], { mode: 'reflect', value: 1 }), 'ERR_ARG');
  throwsCode(() => F.pad(fl.randn([5]), [1, 1], { mode: 'replicate' }), 'ERR_SHAPE');
  throwsCode(() => F.pad(x, [1, 1, 1, 1, 1, 1], { mode: 'replicate' }), 'ERR_SHAPE');
  throwsCode(() => F.pad(fl.zeros([1, 1, 0]), [1, 1], { mode: 'replicate' }), 'ERR_SHAPE');
  throwsCode(() => F.pad(x, [1, 1], { mode: 'edge' as never }), 'ERR_ARG');
  throwsCode(() => F.pad(x, [1, 1], { fill: 1 } as never), 'ERR_ARG');
});

test.run();
