#!/usr/bin/env python3
"""PyTorch/cuBLAS anchor for bench/gpu.ts: same work, same JSON shapes."""
import json, time
import torch

dev = "cuda:0"
name = torch.cuda.get_device_name(0)


def bench(fn, iters):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters * 1e3


for dtype, tname in ((torch.float32, "f32"), (torch.float32, "tf32"), (torch.bfloat16, "bf16")):
    torch.backends.cuda.matmul.allow_tf32 = tname == "tf32"
    for n in (1024, 2048, 4096, 8192):
        a = torch.randn(n, n, device=dev, dtype=dtype)
        b = torch.randn(n, n, device=dev, dtype=dtype)
        ms = bench(lambda: a @ b, 10 if n >= 4096 else 30)
        print(json.dumps({"bench": "gemm", "device": name, "impl": "torch", "dtype": tname, "n": n,
                          "ms": round(ms, 3), "tflops": round(2 * n ** 3 / (ms * 1e9), 2)}))
n = 64 * 2 ** 20
x = torch.randn(n, device=dev)
y = torch.randn(n, device=dev)
copy_ms = bench(lambda: x.clone(), 50)
copy_gbps = 8 * n / (copy_ms * 1e6)
print(json.dumps({"bench": "bandwidth", "op": "copy", "impl": "torch", "device": name, "bytes": 8 * n, "gbps": round(copy_gbps, 1)}))
rows = x.view(n // 4096, 4096)
for op, fn, nbytes in (("add", lambda: x + y, 12 * n), ("gelu", lambda: torch.nn.functional.gelu(x), 8 * n),
                       ("softmax", lambda: torch.softmax(rows, -1), 8 * n),
                       ("layernorm", lambda: torch.nn.functional.layer_norm(rows, (4096,)), 8 * n)):
    ms = bench(fn, 50)
    gbps = nbytes / (ms * 1e6)
    print(json.dumps({"bench": "bandwidth", "op": op, "impl": "torch", "device": name, "bytes": nbytes,
                      "gbps": round(gbps, 1), "of_copy": round(gbps / copy_gbps, 3)}))


def train_step(bench_name, model, batch):
    """Median ms of an Adam training step over 5 rounds of 50 (random inputs of Fashion-MNIST's shape)."""
    model = model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    bench(step, 10)
    rounds = sorted(bench(step, 50) for _ in range(5))
    print(json.dumps({"bench": bench_name, "device": name, "impl": "torch", "batch": batch,
                      "ms_per_step": round(rounds[2], 3), "ms_min": round(rounds[0], 3)}))


nn = torch.nn
torch.manual_seed(0)
train_step("fashion-mnist-mlp", nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)), 100)
train_step("fashion-mnist-cnn", nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10)), 64)
