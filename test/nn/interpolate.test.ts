import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { type FixtureTensor, checkCase, close, fixtureFile, load, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;
const fx = fixtureFile('first_hour').cases;
const names = Object.keys(fx).filter((k) => k.startsWith('interpolate_') && k !== 'interpolate_nearest_f32_index');

test('interpolate matches PyTorch forward and backward in every mode', () => {
  assert.ok(names.length >= 16);
  for (const name of names) {
    try {
      checkCase(fx[name], ({ x }) => F.interpolate(x, fx[name].options));
    } catch (e) {
      throw new Error(`${name}: ${(e as Error).message}`);
    }
  }
});

test("nearest indexes as PyTorch 1.13's kernels: f32 arithmetic, f64 for a 3-D f64 input's forward", () => {
  // 6 → 74: position 37 reads element 3 in f64 arithmetic and 2 in f32 (6/74·37 rounds to 2.9999998).
  const c = fx.interpolate_nearest_f32_index;
  const x = load(c.inputs.x, 'f64', true);
  const y = F.interpolate(x, c.options);
  close(y, c.output, 0, 'f64 3-D output');
  const x32 = fl.arange(6, { dtype: 'f32' }).reshape([1, 1, 6]);
  assert.is((F.interpolate(x32, { size: 74 }).dataSync() as Float32Array)[37], 2);
  const x4 = fl.arange(6, { dtype: 'f64' }).reshape([1, 1, 1, 6]);
  assert.is((F.interpolate(x4, { size: [1, 74] }).dataSync() as Float64Array)[37], 2);
  // Our gradient follows our forward (element 3); PyTorch 1.13's backward uses the f32 index (2).
  const pick = new Float64Array(74);
  pick[37] = 1;
  const x1 = fl.zeros([1, 1, 6], { dtype: 'f64' }).requiresGrad_();
  F.interpolate(x1, { size: 74 })
    .mul(fl.tensor(pick, { shape: [1, 1, 74] }))
    .sum()
    .backward();
  assert.equal(Array.from((x1.grad as fl.Tensor).dataSync() as Float64Array), [0, 0, 0, 1, 0, 0]);
});

test('linear modes in f32 agree with the f64 golden values', () => {
  for (const name of ['interpolate_linear', 'interpolate_bilinear_align', 'interpolate_bilinear_scale']) {
    const c = fx[name];
    close(F.interpolate(load(c.inputs.x, 'f32'), c.options), c.output, 1e-5, name);
  }
});

test("f32 inputs match PyTorch's f32 results: source positions computed in f32 as its kernels", () => {
  const cases = fixtureFile('first_hour').interpolate_f32;
  assert.equal(Object.keys(cases).length, 5);
  for (const [name, c] of Object.entries<{ input: FixtureTensor; output: FixtureTensor; options: fl.nn.functional.InterpolateOptions }>(
    cases,
  )) {
    const y = F.interpolate(load(c.input, 'f32'), c.options);
    const got = y.dataSync() as Float32Array;
    const worst = c.output.data.reduce((w, v, i) => Math.max(w, Math.abs(v - got[i])), 0);
    assert.ok(worst <= 3e-6, `${name}: max error ${worst}`);
  }
});

test('interpolate gradients pass a numerical check in f64', () => {
  fl.manualSeed(5);
  const r = fl.randn([1, 2, 5, 3], { dtype: 'f64' });
  numericGradCheck(
    (x) =>
      F.interpolate(x, { size: [5, 3], mode: 'bilinear' })
        .mul(r)
        .sum(),
    fl.randn([1, 2, 3, 4], { dtype: 'f64' }),
  );
  const r1 = fl.randn([2, 1, 7], { dtype: 'f64' });
  numericGradCheck(
    (x) => F.interpolate(x, { size: 7, mode: 'linear', alignCorners: true }).mul(r1).sum(),
    fl.randn([2, 1, 4], { dtype: 'f64' }),
  );
  numericGradCheck((x) => F.interpolate(x, { scaleFactor: 1.8 }).mul(r1).sum(), fl.randn([2, 1, 4], { dtype: 'f64' }));
});

test('Upsample is interpolate with its options checked at construction, printed as PyTorch', () => {
  const c = fx.interpolate_bilinear_align;
  const up = new fl.nn.Upsample(c.options);
  close(up.forward(load(c.inputs.x)), c.output, 1e-9);
  assert.is(new fl.nn.Upsample({ scaleFactor: 2 }).toString(), 'Upsample(scale_factor=2.0, mode=nearest)');
  assert.is(new fl.nn.Upsample({ size: [3, 4], mode: 'bilinear' }).toString(), 'Upsample(size=(3, 4), mode=bilinear)');
  throwsCode(() => new fl.nn.Upsample({ mode: 'bicubic' as never, scaleFactor: 2 }), 'ERR_ARG');
  throwsCode(() => new fl.nn.Upsample({ mode: 'bilinear', size: 4 }).forward(fl.randn([1, 2, 3])), 'ERR_SHAPE');
});

test('interpolate: coded errors for what PyTorch refuses, and for what flockml does not do', () => {
  const x = fl.randn([1, 2, 5]);
  throwsCode(() => F.interpolate(x, {}), 'ERR_ARG');
  throwsCode(() => F.interpolate(x, { size: 3, scaleFactor: 2 }), 'ERR_ARG');
  throwsCode(() => F.interpolate(x, { size: 3, alignCorners: true }), 'ERR_ARG');
  throwsCode(() => F.interpolate(x, { size: 3, recomputeScaleFactor: true }), 'ERR_ARG');
  throwsCode(() => F.interpolate(x, { size: 3, mode: 'bicubic' as never }), 'ERR_ARG');
  throwsCode(() => F.interpolate(fl.randn([1, 2, 3, 4]), { size: 3, mode: 'bilinear', antialias: true }), 'ERR_ARG');
  throwsCode(() => F.interpolate(x, { size: 3, mode: 'bilinear' }), 'ERR_SHAPE');
  throwsCode(() => F.interpolate(x, { size: [3, 4] }), 'ERR_SHAPE');
  throwsCode(() => F.interpolate(x, { scaleFactor: 0.1 }), 'ERR_SHAPE');
  throwsCode(() => F.interpolate(x, { scaleFactor: -1 }), 'ERR_RANGE');
  throwsCode(() => F.interpolate(fl.randn([2, 5]), { size: 3 }), 'ERR_SHAPE');
  throwsCode(() => F.interpolate(fl.randn([1, 1, 2, 2, 2]), { size: 3, mode: 'area' }), 'ERR_SHAPE');
  throwsCode(() => F.interpolate(x, { size: 3, scale: 2 } as never), 'ERR_ARG');
});

test.run();
