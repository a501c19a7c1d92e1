/**
 * Unary GELU (erf form) and its derivative in f32 and bf16 use cpp/cpu/vec_math.h's vectorised
 * gelu_f / gelu_grad_f: within 1e-6 relative of an f64 reference over the range where f32 keeps
 * relative precision, exact at 0 and ±inf, NaN where PyTorch gives NaN; bf16 is the f32 value
 * rounded once. The reference is Φ(x) = (1 + erf(x/√2))/2 with the f64 kernel's erf (libm), and
 * in the negative tail, where 1 + erf cancels, Φ(x) = erfc(|x|/√2)/2 from erfc's continued fraction.
 * cpu_isa.test.ts reruns this file under every narrower instruction set.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { values } from '../helpers/values';

const F = fl.nn.functional;

/** f32 points from -12 to 12 (below -12 Φ(x) nears f32's subnormals), denser near 0, and lengths off the 16-lane blocks. */
function points(): number[] {
  const v: number[] = [];
  for (let i = 0; i <= 24000; i++) v.push(Math.fround(-12 + i * 0.001));
  for (let e = -30; e <= 0; e++) v.push(Math.fround(2 ** e), Math.fround(-(2 ** e)));
  v.push(-0.7517916, -0.75179, 1e-38, -1e-38, 0.5, -0.5, 3);
  return v;
}

/** erfc(z) for z ≥ 2 by its continued fraction, evaluated from the tail (relative error ~1e-16). */
function erfcTail(z: number): number {
  let f = z;
  for (let k = 80; k >= 1; k--) f = z + k / 2 / f;
  return Math.exp(-z * z) / Math.sqrt(Math.PI) / f;
}

/** Φ(x) in f64 for each x. */
function normalCdf(v: number[]): number[] {
  const erf = values(fl.erf(fl.tensor(v, { dtype: 'f64' }).mul(Math.SQRT1_2)));
  return v.map((x, i) => (x < -2 * Math.SQRT2 ? 0.5 * erfcTail(-x * Math.SQRT1_2) : 0.5 * (1 + erf[i])));
}

test('f32 gelu and its gradient are within 1e-6 of the f64 reference', () => {
  const v = points();
  const x = fl.tensor(v, { dtype: 'f32' }).requiresGrad_();
  const y = F.gelu(x);
  y.backward(fl.onesLike(y));
  const cdf = normalCdf(v);
  const got = values(y),
    gGot = values(x.grad!);
  let worst = 0,
    worstGrad = 0;
  for (let i = 0; i < v.length; i++) {
    const want = v[i] * cdf[i];
    worst = Math.max(worst, Math.abs(got[i] - want) / Math.abs(want || 1));
    // gelu'(x) = Φ(x) + x·φ(x) crosses zero near -0.752: measure against the size of its two terms.
    const phi = Math.exp(-0.5 * v[i] * v[i]) / Math.sqrt(2 * Math.PI);
    const gWant = cdf[i] + v[i] * phi;
    const scale = Math.abs(cdf[i]) + Math.abs(v[i] * phi);
    worstGrad = Math.max(worstGrad, Math.abs(gGot[i] - gWant) / scale);
  }
  assert.ok(worst <= 1e-6, `gelu relative error ${worst}`);
  assert.ok(worstGrad <= 1e-6, `gelu gradient relative error ${worstGrad}`);
});

test('f32 gelu at 0, ±inf (-inf·Φ(-inf) is NaN, as PyTorch), NaN and the far negative tail', () => {
  const x = fl.tensor([0, -0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, -30, 30], { dtype: 'f32' }).requiresGrad_();
  const y = values(F.gelu(x));
  assert.is(y[0], 0);
  assert.is(y[2], Number.POSITIVE_INFINITY);
  assert.ok(Number.isNaN(y[3]), `gelu(-inf) = ${y[3]}`);
  assert.ok(Number.isNaN(y[4]));
  assert.ok(Math.abs(y[5]) < 1e-38, `gelu(-30) = ${y[5]}`);
  assert.is(y[6], 30);
  F.gelu(x).backward(fl.onesLike(x));
  const g = values(x.grad!);
  assert.is(g[0], 0.5);
  assert.is(g[6], 1);
  assert.ok(Number.isNaN(g[4]));
});

test('bf16 gelu and its gradient are the f32 ones rounded once', () => {
  const v = points().filter((_, i) => i % 13 === 0);
  const x = fl.tensor(v, { dtype: 'f32' }).to('bf16');
  const xs = x.to('f32');
  const y = F.gelu(x);
  assert.is(y.dtype, 'bf16');
  assert.equal(values(y), values(F.gelu(xs).to('bf16')));
  const xb = x.detach().requiresGrad_();
  F.gelu(xb).backward(fl.onesLike(xb));
  const xf = xs.detach().requiresGrad_();
  F.gelu(xf).backward(fl.onesLike(xf));
  assert.equal(values(xb.grad!), values(xf.grad!.to('bf16')));
});

test.run();
