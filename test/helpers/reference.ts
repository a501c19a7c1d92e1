/** Plain-JS f64 references, and the one comparison (close) of the tests and the rank workers of test/dist. */
import * as assert from 'uvu/assert';
import type { NativeTensor, NewTensor } from '../../lib/native';

/**
 * The kept-dims group of each element of a row-major `shape` reduced over `dims`: the element at
 * linear index `lin` goes to output element `groupOf(shape, dims)(lin)` (row-major in the shape with
 * `dims` set to 1).
 */
export function groupOf(shape: number[], dims: number[]): (lin: number) => number {
  const outShape = shape.map((s, i) => (dims.includes(i) ? 1 : s));
  return (lin) => {
    let rem = lin,
      o = 0,
      mul = 1;
    for (let d = shape.length - 1; d >= 0; d--) {
      const i = rem % shape[d];
      rem = Math.floor(rem / shape[d]);
      o += (dims.includes(d) ? 0 : i) * mul;
      mul *= outShape[d];
    }
    return o;
  };
}

/**
 * Asserts |actual[i] − expected[i]| ≤ atol + rtol·|expected[i]| for every i (torch.allclose's rule;
 * pure absolute tolerance is rtol 0, exact equality rtol and atol 0), naming `what` and the first
 * element that is off. A NaN in `expected` asks for a NaN in `actual`; with `equalNan` false a NaN
 * on either side fails, for comparisons of two runs of the library, which can both go NaN.
 */
export function close(actual: ArrayLike<number>, expected: ArrayLike<number>, rtol = 1e-5, atol = 1e-6, what = '', equalNan = true): void {
  assert.is(actual.length, expected.length, `${what} length`);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i],
      e = expected[i];
    if (Number.isNaN(e) && equalNan) {
      assert.ok(Number.isNaN(a), `${what}[${i}]: expected NaN, got ${a}`);
      continue;
    }
    const ok = a === e || Math.abs(a - e) <= atol + rtol * Math.abs(e);
    if (!ok) assert.unreachable(`${what}[${i}]: got ${a}, expected ${e}`);
  }
}

/** Reference C = op(A)·op(B) in f64; A is m×k (or k×m when ta), B k×n (or n×k when tb). */
export function refMatmul(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  m: number,
  n: number,
  k: number,
  ta = false,
  tb = false,
): Float64Array {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = s;
    }
  return c;
}

export function expectError(fn: () => unknown, ctor: ErrorConstructor, code: string, pattern?: RegExp): void {
  try {
    fn();
  } catch (e) {
    assert.instance(e, ctor);
    assert.is((e as { code?: string }).code, code, `code of: ${(e as Error).message}`);
    if (pattern) assert.match((e as Error).message, pattern);
    return;
  }
  assert.unreachable(`expected ${ctor.name} ${code}`);
}

/** A handle straight from the addon, used as an op's input by tests that call it directly. */
export function raw(h: NewTensor): NativeTensor {
  return h as unknown as NativeTensor;
}
