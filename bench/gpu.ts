/**
 * GPU benchmarks (JSON lines): GEMM TFLOP/s (f32, tf32, bf16) at 1024…8192 and the bandwidth of
 * element-wise, softmax and layernorm kernels as a fraction of a measured device-to-device copy;
 * the Fashion-MNIST MLP (batch 100) and CNN (batch 64) training step (Adam) on random inputs of the
 * dataset's shape, so the GPU machine needs no dataset. Anchor: bench/anchors/torch_gpu.py on the same machine prints the same shapes.
 */
import * as fl from '../lib/index';
import { cnn } from '../examples/common';

const dev = 'cuda:0';

async function time(fn: () => void, iters: number): Promise<number> {
  fn();
  await fl.sync(dev);
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) fl.tidy(fn);
  await fl.sync(dev);
  return (performance.now() - t0) / iters;
}

async function main(): Promise<void> {
  if (!fl.cuda.isAvailable()) {
    console.log(JSON.stringify({ bench: 'gpu', skipped: 'no CUDA device' }));
    return;
  }
  const name = fl.cuda.deviceName(0);
  // tf32 is f32 storage with fl.backends.cuda.allowTF32 on (read when each matmul is queued).
  for (const dtype of ['f32', 'tf32', 'bf16'] as const) {
    fl.backends.cuda.allowTF32 = dtype === 'tf32';
    const storage = dtype === 'tf32' ? 'f32' : dtype;
    for (const n of [1024, 2048, 4096, 8192]) {
      const a = fl.randn([n, n], { device: dev }).to(storage),
        b = fl.randn([n, n], { device: dev }).to(storage);
      const ms = await time(
        () => {
          a.matmul(b);
        },
        n >= 4096 ? 10 : 30,
      );
      console.log(
        JSON.stringify({ bench: 'gemm', device: name, dtype, n, ms: +ms.toFixed(3), tflops: +((2 * n ** 3) / (ms * 1e9)).toFixed(2) }),
      );
      a.dispose();
      b.dispose();
    }
  }
  fl.backends.cuda.allowTF32 = false;
  const n = 64 * 2 ** 20;
  const x = fl.randn([n], { device: dev }),
    y = fl.randn([n], { device: dev });
  const copyMs = await time(() => {
    x.clone();
  }, 50);
  const copyGbps = (2 * 4 * n) / (copyMs * 1e6);
  console.log(JSON.stringify({ bench: 'bandwidth', op: 'copy', device: name, bytes: 8 * n, gbps: +copyGbps.toFixed(1) }));
  const rows = x.reshape(n / 4096, 4096);
  for (const [op, fn, bytes] of [
    [
      'add',
      () => {
        x.add(y);
      },
      12 * n,
    ],
    [
      'gelu',
      () => {
        x.gelu();
      },
      8 * n,
    ],
    [
      'softmax',
      () => {
        rows.softmax(-1);
      },
      8 * n,
    ],
    [
      'layernorm',
      () => {
        fl.nn.functional.layerNorm(rows, [4096]);
      },
      8 * n,
    ],
  ] as [string, () => void, number][]) {
    let ms: number;
    try {
      ms = await time(fn, 50);
    } catch (e) {
      // A build may lack a kernel (e.g. no CUDA layernorm yet): report it and go on.
      console.log(JSON.stringify({ bench: 'bandwidth', op, device: name, skipped: (e as Error).message }));
      continue;
    }
    const gbps = bytes / (ms * 1e6);
    console.log(
      JSON.stringify({ bench: 'bandwidth', op, device: name, bytes, gbps: +gbps.toFixed(1), of_copy: +(gbps / copyGbps).toFixed(3) }),
    );
  }
}

/** Median ms of a training step over 5 rounds of 50, after 10 warm-up steps. */
async function trainStep(
  name: string,
  model: fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor },
  batch: number,
  device: string,
): Promise<void> {
  model.to(device);
  const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
  const x = fl.randn([batch, 1, 28, 28], { device }),
    y = fl.randint(0, 10, [batch]).to(device);
  const step = () => {
    const loss = fl.nn.functional.crossEntropy(model.forward(x), y);
    opt.zeroGrad();
    loss.backward();
    opt.step();
  };
  const warm = await time(step, 10);
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) rounds.push(await time(step, 50));
  rounds.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      bench: name,
      device: fl.cuda.deviceName(0),
      batch,
      ms_per_step: +rounds[2].toFixed(3),
      ms_min: +rounds[0].toFixed(3),
      warmup_ms: +warm.toFixed(3),
    }),
  );
}

async function fashionMnist(): Promise<void> {
  if (!fl.cuda.isAvailable()) return;
  const { nn } = fl;
  fl.manualSeed(0);
  await trainStep(
    'fashion-mnist-mlp',
    new nn.Sequential(new nn.Flatten(), new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10)),
    100,
    dev,
  );
  await trainStep('fashion-mnist-cnn', cnn(), 64, dev);
}

main()
  .then(fashionMnist)
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
