/**
 * GPU conformance: every op on cuda:0 against the CPU backend (f64 reference where it exists), on
 * fresh random inputs with odd sizes. Without a CUDA device this file checks only that CUDA
 * tensors are refused cleanly, and says so in one line. New CUDA allocations are poisoned with NaN
 * (./poison_env), so an output element a kernel does not write cannot match.
 */
import './poison_env';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import type { Tensor } from '../../lib/index';
import { gpuSuiteRuns } from './gpu_present';

const hasGpu = gpuSuiteRuns('GPU conformance');
const dev = 'cuda:0';
fl.manualSeed(99);

function values(t: Tensor): number[] {
  return Array.from(
    t
      .to('cpu')
      .to(t.dtype === 'bf16' || t.dtype === 'f16' ? 'f32' : t.dtype)
      .dataSync() as ArrayLike<number | bigint>,
    Number,
  );
}

const TOL: Record<string, [number, number]> = { f64: [1e-10, 1e-12], f32: [1e-5, 1e-5], bf16: [1e-2, 1e-2], f16: [5e-3, 5e-3] };

function check(name: string, f: (xs: Tensor[]) => Tensor, make: () => Tensor[], dtype = 'f32', tol?: [number, number]): void {
  test(`${name} (${dtype}) on ${dev} matches the CPU`, () => {
    const cpu = make();
    const gpu = cpu.map((t) => t.to(dev));
    const want = values(f(cpu));
    const got = values(f(gpu));
    const [rtol, atol] = tol ?? TOL[dtype] ?? [1e-5, 1e-5];
    assert.is(got.length, want.length);
    for (let i = 0; i < want.length; i++) {
      const ok =
        got[i] === want[i] ||
        Math.abs(got[i] - want[i]) <= atol + rtol * Math.abs(want[i]) ||
        (Number.isNaN(got[i]) && Number.isNaN(want[i]));
      if (!ok) assert.unreachable(`${name}[${i}]: gpu ${got[i]} vs cpu ${want[i]}`);
    }
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
  const sizes = [1, 3, 127, 1025];
  const r =
    (shape: number[], dtype: fl.DType = 'f32') =>
    () => [fl.randn(shape).to(dtype)];
  for (const n of sizes) {
    for (const op of ['exp', 'tanh', 'sigmoid', 'relu', 'gelu', 'silu', 'neg', 'abs'] as const)
      check(`${op} n=${n}`, ([x]) => (x as unknown as Record<string, () => Tensor>)[op](), r([n]));
    check(
      `add broadcast n=${n}`,
      ([a, b]) => a.add(b),
      () => [fl.randn([3, n]), fl.randn([n])],
    );
    check(
      `mul n=${n}`,
      ([a, b]) => a.mul(b),
      () => [fl.randn([n]), fl.randn([n])],
    );
    check(`sum rows n=${n}`, ([a]) => a.sum(1), r([3, n]), 'f32', [1e-4, 1e-4]);
    check(`max cols n=${n}`, ([a]) => a.max(0).values, r([n, 5]));
    check(`argmax n=${n}`, ([a]) => a.argmax(1), r([2, n]));
    check(`var n=${n}`, ([a]) => a.var(1), r([2, n]), 'f32', [1e-4, 1e-4]);
    check(`softmax n=${n}`, ([a]) => a.softmax(-1), r([4, n]));
    check(`logSoftmax n=${n}`, ([a]) => a.logSoftmax(-1), r([4, n]));
    check(`transpose n=${n}`, ([a]) => a.T, r([n, 7]));
    check(
      `cat n=${n}`,
      ([a, b]) => fl.cat([a, b], 1),
      () => [fl.randn([2, n]), fl.randn([2, 3])],
    );
    check(`indexSelect n=${n}`, ([a]) => a.indexSelect(0, fl.randint(0, n, [9]).to(dev)), r([n, 3]));
  }
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
    ]) {
      check(
        `matmul ${m}x${n}x${k} tA=${ta} tB=${tb}`,
        ([a, b]) => (ta ? a.T : a).matmul(tb ? b.T : b),
        () => [fl.randn(ta ? [k, m] : [m, k]), fl.randn(tb ? [n, k] : [k, n])],
        'f32',
        [1e-4, 1e-4],
      );
    }
    for (const dt of ['bf16', 'f16'] as const)
      check(
        `matmul ${m}x${n}x${k}`,
        ([a, b]) => a.matmul(b),
        () => [fl.randn([m, k]).to(dt), fl.randn([k, n]).to(dt)],
        dt,
        [2e-2, 5e-2],
      );
  }
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
  const acts = ['none', 'relu', 'gelu', 'gelu_tanh', 'silu', 'tanh', 'sigmoid'] as const;
  // Widths that take the 16-byte pack path (multiples of 8) and the element path (the rest).
  for (const n of [1, 3, 127, 128, 1024, 1025]) {
    for (const act of acts)
      check(
        `linear ${act} out=${n}`,
        ([x, w, b]) => fl.nn.functional.linear(x, w, b, { activation: act }),
        () => [fl.randn([7, 33]), fl.randn([n, 33]), fl.randn([n])],
        'f32',
        [1e-4, 1e-4],
      );
  }
  for (const dt of ['bf16', 'f16'] as const)
    check(
      `linear gelu out=64`,
      ([x, w, b]) => fl.nn.functional.linear(x, w, b, { activation: 'gelu' }),
      () => [fl.randn([5, 32]).to(dt), fl.randn([64, 32]).to(dt), fl.randn([64]).to(dt)],
      dt,
      [2e-2, 5e-2],
    );
  // A bias that is a view one element in is not 16-byte aligned: the element path must serve it.
  check(
    'linear silu with an unaligned bias view',
    ([x, w, b]) => fl.nn.functional.linear(x, w, b.narrow(0, 1, 64), { activation: 'silu' }),
    () => [fl.randn([6, 16]), fl.randn([64, 16]), fl.randn([65])],
    'f32',
    [1e-4, 1e-4],
  );
  for (const act of acts) {
    test(`linear ${act} gradients on ${dev} match the CPU`, () => {
      const run = (device: string) => {
        fl.manualSeed(31);
        const x = fl.randn([9, 24]).to(device).requiresGrad_(),
          w = fl.randn([40, 24]).to(device).requiresGrad_();
        const b = fl.randn([40]).to(device).requiresGrad_(),
          r = fl.randn([9, 40]).to(device);
        fl.nn.functional.linear(x, w, b, { activation: act }).mul(r).sum().backward();
        return [x, w, b].map((t) => values(t.grad!));
      };
      const c = run('cpu'),
        g = run(dev);
      c.forEach((vs, k) =>
        vs.forEach((v, i) => assert.ok(Math.abs(v - g[k][i]) <= 1e-4 + 1e-4 * Math.abs(v), `${act} grad ${k}[${i}]: ${g[k][i]} vs ${v}`)),
      );
    });
  }
  check(
    'matmul f64',
    ([a, b]) => a.matmul(b),
    () => [fl.randn([33, 17], { dtype: 'f64' }), fl.randn([17, 9], { dtype: 'f64' })],
    'f64',
  );
  check(
    'gather/scatterAdd',
    ([a, s]) =>
      a
        .scatterAdd(
          1,
          fl
            .tensor(
              [
                [0, 2],
                [1, 1],
              ],
              { dtype: 'i64' },
            )
            .to(dev),
          s,
        )
        .gather(1, fl.tensor([[1, 0]], { dtype: 'i64' }).to(dev)),
    () => [fl.randn([2, 3]), fl.randn([2, 2])],
  );
  check('cast chain', ([a]) => a.to('bf16').to('f16').to('f32'), r([1025]), 'f32', [1e-2, 1e-2]);
  test('random numbers are identical on CPU and CUDA for the same seed', () => {
    fl.manualSeed(5);
    const c = Array.from(fl.randn([1027]).dataSync(), Number);
    fl.manualSeed(5);
    const g = values(fl.randn([1027], { device: dev }));
    for (let i = 0; i < c.length; i++) assert.ok(Math.abs(c[i] - g[i]) < 1e-5, `randn[${i}]`);
  });
  test('gradients on the GPU match the CPU', () => {
    const run = (device: string) => {
      fl.manualSeed(8);
      const w = fl.randn([17, 5]).to(device).requiresGrad_();
      const x = fl.randn([9, 17]).to(device);
      x.matmul(w).tanh().logSoftmax(1).sum().backward();
      return values(w.grad!);
    };
    const c = run('cpu'),
      g = run(dev);
    c.forEach((v, i) => assert.ok(Math.abs(v - g[i]) < 1e-4, `grad[${i}]: ${g[i]} vs ${v}`));
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
