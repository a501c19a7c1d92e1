/** fl.backends: the TF32 switch round-trips, rejects non-booleans, and leaves CPU matmuls alone. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../lib/index';
import { native } from '../lib/native';

const isArgTypeError = (e: Error & { code?: string }) => e instanceof TypeError && e.code === 'ERR_ARG';

test('allowTF32 is off by default and round-trips', () => {
  assert.is(fl.backends.cuda.allowTF32, false);
  fl.backends.cuda.allowTF32 = true;
  assert.is(fl.backends.cuda.allowTF32, true);
  fl.backends.cuda.allowTF32 = false;
  assert.is(fl.backends.cuda.allowTF32, false);
});

test('allowTF32 rejects non-booleans with ERR_ARG and keeps its value', () => {
  fl.backends.cuda.allowTF32 = true;
  for (const bad of [1, 0, 'true', null, undefined, {}] as unknown[]) {
    assert.throws(() => {
      (fl.backends.cuda as { allowTF32: unknown }).allowTF32 = bad;
    }, isArgTypeError);
    assert.is(fl.backends.cuda.allowTF32, true);
  }
  // The addon checks again what reaches it.
  assert.throws(() => (native.setAllowTF32 as (v: unknown) => void)(1), isArgTypeError);
  fl.backends.cuda.allowTF32 = false;
});

test('CPU matmuls ignore allowTF32 (full f32 precision either way)', () => {
  // 1 + 2^-12 needs 13 mantissa bits: TF32 would round it to 1.
  const a = fl.tensor([
    [1 + 2 ** -12, 0],
    [0, 1],
  ]);
  const b = fl.tensor([
    [1, 0],
    [0, 1],
  ]);
  fl.backends.cuda.allowTF32 = true;
  try {
    assert.is(a.matmul(b).dataSync()[0], Math.fround(1 + 2 ** -12));
  } finally {
    fl.backends.cuda.allowTF32 = false;
  }
});

test.run();
