/**
 * The conformance harness: every op of the manifest (lib/manifest/) through its cases
 * (test/ops/cases/), on every device it declares dtypes for:
 *   cpu    forward against the f64 reference in each dtype, on non-contiguous inputs too, at the odd
 *          sizes 0, 1, 3, 127, 1025 (cases with `sized`), and the f64 central-difference gradient check
 *          (on cases of at most GRADCHECK_MAX_ELEMENTS input elements), and in every dtype the entry
 *          does not declare: refused with a coded error or promoted, never computed in it;
 *   cuda:N the same inputs against the CPU's outputs and gradients, with fresh CUDA memory NaN-poisoned.
 * Fails when a manifest op has no case or a case names an op the manifest lacks.
 */
import '../../gpu/poison_env';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../../lib/index';
import { native } from '../../../lib/native';
import { gpuSuiteRuns } from '../../gpu/gpu_present';
import {
  ODD_SIZES,
  againstCpu,
  caseName,
  dtypesFor,
  forward,
  gradAgainstCpu,
  gradcheckFits,
  gradient,
  undeclaredDtypes,
  wantsGrad,
} from './check';
import { coverage } from './plan';
import { manifest, type OpDecl } from '../../../lib/manifest/index';

const all = coverage();
const { missing, unknown } = all;
// FLOCKML_HARNESS_OPS=add,matmul runs only those ops' cases (the simulator's mutation check uses it).
const only = process.env.FLOCKML_HARNESS_OPS?.split(',').filter(Boolean);
const covered = only ? all.covered.filter(({ c }) => only.includes(c.op)) : all.covered;

test('every manifest op has a conformance case', () => {
  assert.equal(missing, [], `ops without a case in test/ops/cases/: ${missing.join(', ')}`);
});

test('every case names a manifest op', () => {
  assert.equal(unknown, [], `cases for ops the manifest does not declare: ${unknown.join(', ')}`);
});

test('the checks fail on a wrong result, an unwritten output and a wrong gradient', () => {
  const base = { op: 'exp', inputs: [{ shape: [3, 4] }], run: (x: fl.Tensor) => x.exp() };
  const exp = (x: { shape: number[]; data: Float64Array }) => ({ shape: x.shape, data: x.data.map(Math.exp) });
  assert.is(forward({ ...base, reference: exp }, base.inputs, 'f32'), null);
  assert.match(
    String(forward({ ...base, reference: (x) => ({ ...exp(x), data: exp(x).data.map((v) => v * (1 + 1e-3)) }) }, base.inputs, 'f32')),
    /element 0/,
  );
  assert.match(
    String(forward({ ...base, run: (x) => new fl.Tensor(native.empty([...x.shape], 'f32', 'cpu')), reference: exp }, base.inputs, 'f32')),
    /element/,
  );
  assert.match(String(forward({ ...base, reference: (x) => ({ shape: [12], data: exp(x).data }) }, base.inputs, 'f32')), /shape/);
  // exp recorded with its own value as the gradient is right; a detached square is not.
  assert.is(gradient({ ...base, reference: exp }), null);
  const wrongGrad = { ...base, run: (x: fl.Tensor) => x.exp().add(fl.noGrad(() => x.square())), reference: exp };
  assert.match(String(gradient(wrongGrad)), /analytic/);
});

test('an element-wise op with a reference and no hand case gets a derived case; without one it is missing', () => {
  const exp = manifest.find((o) => o.name === 'exp') as OpDecl;
  const maximum = manifest.find((o) => o.name === 'maximum') as OpDecl;
  const withRef: OpDecl[] = [
    { ...exp, reference: Math.exp },
    { ...maximum, reference: Math.max },
  ];
  const got = coverage(withRef, []);
  assert.equal(got.missing, []);
  assert.equal(
    got.covered.map(({ c }) => c.op),
    ['exp', 'maximum'],
  );
  for (const { c } of got.covered) {
    assert.is(forward(c, c.inputs, 'f32'), null, c.op);
    assert.is(gradient(c), null, c.op);
  }
  // A wrong reference fails the derived case; no reference (or a non-element-wise op) leaves the op missing.
  const [wrong] = coverage([{ ...exp, reference: (v) => Math.exp(v) * 1.01 }], []).covered;
  assert.match(String(forward(wrong.c, wrong.c.inputs, 'f32')), /element/);
  const sum = manifest.find((o) => o.name === 'sum') as OpDecl;
  assert.equal(coverage([exp, { ...sum, reference: (v) => v }], []).missing, ['exp', 'sum']);
});

function must(what: string, problem: string | null): void {
  if (problem) assert.unreachable(`${what}: ${problem}`);
}

// The odd-size sweep and the non-contiguous layouts run in one dtype per case (f32 when declared),
// the reference comparison in every dtype.
for (const { c, decl } of covered) {
  const name = caseName(c);
  const dtypes = dtypesFor(c, decl, 'cpu');
  if (!decl.dtypes.cpu) continue;
  test(`${name} on cpu has a dtype to run in`, () => assert.ok(dtypes.length > 0, `no dtype of ${c.dtypes ?? '[]'} is declared for cpu`));
  const main = dtypes.includes('f32') ? 'f32' : dtypes[0];
  for (const dtype of dtypes) {
    test(`${name} on cpu in ${dtype}: forward against the f64 reference`, () => {
      must('forward', forward(c, c.inputs, dtype));
      if (dtype !== main) return;
      if (c.nonContiguous ?? c.inputs.some((s) => s.shape.length >= 2))
        must('non-contiguous', forward(c, c.inputs, dtype, 'non-contiguous'));
      if (c.sized) for (const n of ODD_SIZES) must(`size ${n}`, forward(c, c.sized(n), dtype));
    });
  }
  if (wantsGrad(c, decl) && gradcheckFits(c))
    test(`${name} on cpu: f64 gradient against central differences`, () => must('gradcheck', gradient(c)));
  test(`${name} on cpu: the dtypes the manifest does not declare are refused or promoted`, () => {
    const problems = undeclaredDtypes(c, decl);
    if (problems.length) assert.unreachable(problems.join('; '));
  });
}

const cudaCases = covered.filter(({ decl }) => decl.dtypes.cuda).length;
if (gpuSuiteRuns(`op harness: ${cudaCases} CUDA cases (against the CPU)`)) {
  const devices = Array.from({ length: fl.cuda.deviceCount() }, (_, i) => `cuda:${i}`);
  for (const device of devices)
    for (const { c, decl } of covered) {
      if (!decl.dtypes.cuda) continue;
      const name = caseName(c);
      const dtypes = dtypesFor(c, decl, 'cuda');
      for (const dtype of dtypes) {
        test(`${name} on ${device} in ${dtype}: outputs equal the CPU's`, () => {
          must('default', againstCpu(c, c.inputs, dtype, device));
          if (c.nonContiguous ?? c.inputs.some((s) => s.shape.length >= 2))
            must('non-contiguous', againstCpu(c, c.inputs, dtype, device, 'non-contiguous'));
          if (c.sized) for (const n of ODD_SIZES) must(`size ${n}`, againstCpu(c, c.sized(n), dtype, device));
          if (wantsGrad(c, decl) && (dtype === 'f32' || dtype === 'f64')) must('backward', gradAgainstCpu(c, dtype, device));
        });
      }
    }
}

test.run();
