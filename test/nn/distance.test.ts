import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, close, fixtureFile, load, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;
const fx = fixtureFile('first_hour').cases;
/** The fixture's options with Python's float('inf') back as Infinity. */
const opts = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v === 'inf' ? Infinity : v]));
const named = (prefix: string) => Object.keys(fx).filter((k) => k.startsWith(prefix));

test('normalize matches PyTorch (p 2, 1 and inf; a zero row; eps)', () => {
  for (const name of named('normalize')) checkCase(fx[name], ({ x }) => F.normalize(x, opts(fx[name].options)));
});

test("cosineSimilarity matches PyTorch 1.13, the clamped norm's gradient included, and broadcasts", () => {
  for (const name of named('cosine_similarity')) checkCase(fx[name], ({ a, b }) => F.cosineSimilarity(a, b, opts(fx[name].options)));
});

test('pairwiseDistance matches PyTorch (p 2, 1, 3, inf; keepdim; broadcast)', () => {
  for (const name of named('pairwise_distance')) checkCase(fx[name], ({ a, b }) => F.pairwiseDistance(a, b, opts(fx[name].options)));
});

test('the layers give the functional results', () => {
  const c = fx.cosine_similarity_eps;
  close(new fl.nn.CosineSimilarity(c.options).forward(load(c.inputs.a), load(c.inputs.b)), c.output);
  const p = fx.pairwise_distance_p1;
  close(new fl.nn.PairwiseDistance(p.options).forward(load(p.inputs.a), load(p.inputs.b)), p.output);
  assert.is(new fl.nn.PairwiseDistance().toString(), 'PairwiseDistance()');
  // f32 inputs, and integer inputs promoted to f32 as PyTorch's result type.
  const y = F.cosineSimilarity(fl.tensor([[1, 0]]), fl.tensor([[1, 1]]));
  assert.is(y.dtype, 'f32');
  assert.ok(Math.abs(y.itemSync() - Math.SQRT1_2) < 1e-6);
});

test('distance gradients pass a numerical check in f64', () => {
  fl.manualSeed(7);
  const b = fl.randn([3, 4], { dtype: 'f64' });
  const r = fl.randn([3], { dtype: 'f64' });
  numericGradCheck((a) => F.cosineSimilarity(a, b).mul(r).sum(), fl.randn([3, 4], { dtype: 'f64' }));
  numericGradCheck((a) => F.pairwiseDistance(a, b, { p: 1.5 }).mul(r).sum(), fl.randn([3, 4], { dtype: 'f64' }));
  const r2 = fl.randn([3, 4], { dtype: 'f64' });
  numericGradCheck((a) => F.normalize(a, { dim: 0 }).mul(r2).sum(), fl.randn([3, 4], { dtype: 'f64' }));
});

test('distances: coded errors', () => {
  throwsCode(() => F.cosineSimilarity(fl.randn([3, 4]), fl.randn([2, 4])), 'ERR_SHAPE');
  throwsCode(() => F.cosineSimilarity(fl.randn([3, 4]), fl.randn([3, 4]), { dim: 2 }), 'ERR_INDEX');
  throwsCode(() => F.normalize(fl.randn([3, 4]), { eps: -1 }), 'ERR_RANGE');
  throwsCode(() => F.normalize(fl.randn([3, 4]), { axis: 1 } as never), 'ERR_ARG');
  throwsCode(() => F.pairwiseDistance(fl.randn([3, 4]), fl.randn([3, 5])), 'ERR_SHAPE');
  throwsCode(() => F.pairwiseDistance(fl.randn([3, 4]), fl.randn([3, 4]), { keepdim: 1 as never }), 'ERR_ARG');
  throwsCode(() => new fl.nn.CosineSimilarity({ dim: 0.5 }), 'ERR_RANGE');
});

test.run();
