/**
 * GPU behaviour that is not one op's conformance (the op harness, test/ops/harness/, runs every
 * op's cases on CUDA against the CPU): TF32 matmul rounding and when the setting is read, the
 * random stream's equality across devices, NaN poisoning itself, large host transfers, out of
 * memory. Without a CUDA device this file checks only that CUDA tensors are refused cleanly, and
 * says so in one line. New CUDA allocations are poisoned with NaN (./poison_env).
 */
import './poison_env';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import type { Tensor } from '../../lib/index';
import { gpuSuiteRuns } from './gpu_present';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';

const hasGpu = gpuSuiteRuns('GPU conformance');
const dev = 'cuda:0';
fl.manualSeed(99);

const TOL: Record<string, [number, number]> = { f64: [1e-10, 1e-12], f32: [1e-5, 1e-5], bf16: [1e-2, 1e-2], f16: [5e-3, 5e-3] };

function check(name: string, f: (xs: Tensor[]) => Tensor, make: () => Tensor[], dtype = 'f32', tol?: [number, number]): void {
  test(`${name} (${dtype}) on ${dev} matches the CPU`, () => {
    const cpu = make();
    const gpu = cpu.map((t) => t.to(dev));
    const want = values(f(cpu));
    const got = values(f(gpu));
    const [rtol, atol] = tol ?? TOL[dtype] ?? [1e-5, 1e-5];
    close(got, want, rtol, atol, `${name} (gpu against cpu)`);
  });
}

if (!hasGpu) {
  test('without a GPU, CUDA tensors are refused with ERR_DEVICE', () => {
    assert.throws(
      () => fl.zeros([2], { device: dev }),
      (e: Error & { code?: string }) => e instanceof TypeError && e.code === 'ERR_DEVICE',
    );
  });
} else {
  // TF32 keeps 10 mantissa bits per operand: errors grow like sqrt(k) times the operand rounding.
  const tf32 = (f: (xs: Tensor[]) => Tensor) => (xs: Tensor[]) => {
    fl.backends.cuda.allowTF32 = true;
    try {
      return f(xs);
    } finally {
      fl.backends.cuda.allowTF32 = false;
    }
  };
  for (const [m, n, k] of [
    [1, 1, 1],
    [3, 127, 65],
    [127, 129, 1025],
    [256, 256, 256],
  ]) {
    for (const [ta, tb] of [
      [false, false],
      [true, false],
      [false, true],
      [true, true],
    ]) {
      check(
        `matmul tf32 ${m}x${n}x${k} tA=${ta} tB=${tb}`,
        tf32(([a, b]) => (ta ? a.T : a).matmul(tb ? b.T : b)),
        () => [fl.randn(ta ? [k, m] : [m, k]), fl.randn(tb ? [n, k] : [k, n])],
        'f32',
        [1e-3, 3e-3 * Math.sqrt(k)],
      );
    }
  }
  check(
    'matmul tf32 batched with broadcast',
    tf32(([a, b]) => a.matmul(b)),
    () => [fl.randn([3, 1, 33, 70]), fl.randn([4, 70, 19])],
    'f32',
    [1e-3, 3e-3 * Math.sqrt(70)],
  );
  test('allowTF32 rounds f32 operands on CUDA only, and is read when the matmul is queued', () => {
    // 1 + 2^-12 needs 12 mantissa bits; TF32 keeps 10 and rounds it to 1.
    const a = fl.tensor([[1 + 2 ** -12]]),
      b = fl.tensor([[1]]);
    const exact = Math.fround(1 + 2 ** -12);
    assert.is(values(a.to(dev).matmul(b.to(dev)))[0], exact);
    fl.backends.cuda.allowTF32 = true;
    const queued = a.to(dev).matmul(b.to(dev));
    fl.backends.cuda.allowTF32 = false;
    assert.is(values(queued)[0], 1);
    assert.is(a.matmul(b).dataSync()[0], exact);
  });
  test('random numbers are identical on CPU and CUDA for the same seed', () => {
    fl.manualSeed(5);
    const c = Array.from(fl.randn([1027]).dataSync(), Number);
    fl.manualSeed(5);
    const g = values(fl.randn([1027], { device: dev }));
    for (let i = 0; i < c.length; i++) assert.ok(Math.abs(c[i] - g[i]) < 1e-5, `randn[${i}]`);
  });
  test('fresh CUDA memory is poisoned with NaN while the conformance suite runs', () => {
    assert.is(process.env.FLOCKML_CUDA_POISON, '1');
    for (const dtype of ['f32', 'bf16', 'f16'] as const) {
      const t = new fl.Tensor(native.empty([1031], dtype, dev));
      assert.ok(values(t).every(Number.isNaN), `${dtype}: uninitialised memory is not NaN`);
    }
  });
  test('host transfers larger than the pinned staging buffer arrive whole, in order', async () => {
    const n = 9_000_003; // 36 MB of f32: more than one staging chunk, and not a multiple of one
    const src = new Float32Array(n);
    for (let i = 0; i < n; i++) src[i] = i * 0.5;
    const t = fl.tensor(src, { device: dev });
    const [a, b] = await Promise.all([t.data(), t.mul(2).data()]);
    for (let i = 0; i < n; i++) {
      if (a[i] !== src[i]) assert.unreachable(`data()[${i}]: ${a[i]} vs ${src[i]}`);
      if (b[i] !== 2 * src[i]) assert.unreachable(`(t·2).data()[${i}]: ${b[i]} vs ${2 * src[i]}`);
    }
    const small = await Promise.all([1, 2, 3].map((v) => fl.full([5], v, { device: dev }).data()));
    small.forEach((d, k) => assert.equal(Array.from(d as Float32Array), Array(5).fill(k + 1)));
  });
  test('out of memory is a catchable RangeError and the device keeps working', () => {
    assert.throws(
      () => fl.zeros([2 ** 40], { device: dev }),
      (e: Error & { code?: string }) => e instanceof RangeError && e.code === 'ERR_OOM',
    );
    assert.is(fl.ones([10], { device: dev }).sum().to('cpu').itemSync(), 10);
  });
}

test.run();
