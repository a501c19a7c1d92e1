"""PyTorch anchor for bench/fashion_mnist.ts: the same models, batch sizes, optimizer and step
count on the CPU with 2 threads; prints the same JSON lines.

    /usr/bin/python3 bench/anchors/torch_fashion_mnist.py [--steps N] [--rounds R]
    /usr/bin/python3 bench/anchors/torch_fashion_mnist.py --serve [--steps N]
        one timed round per stdin line "mlp" or "cnn", answering {"model", "ms_per_step"}, so that
        bench/fashion_mnist.ts can alternate its rounds with PyTorch's
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from blas_library import blas_library

DIR = os.environ.get("FLOCKML_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def load(limit):
    with gzip.open(os.path.join(DIR, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16)[: limit * 784].reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(DIR, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:limit]
    return torch.from_numpy(x.astype(np.float32) / 255), torch.from_numpy(y.astype(np.int64))


class Runner:
    """One model's training steps on its own data, warmed up once."""

    def __init__(self, model, batch, steps):
        self.batch, self.steps = batch, steps
        self.x, self.y = load(batch * (steps + 10))
        self.model, self.opt = model, torch.optim.Adam(model.parameters(), lr=1e-3)
        for i in range(10):
            self.step(i)

    def step(self, i):
        b = self.batch
        xb, yb = self.x[i * b:(i + 1) * b], self.y[i * b:(i + 1) * b]
        loss = F.cross_entropy(self.model(xb), yb)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    def round_ms(self):
        t0 = time.perf_counter()
        for i in range(10, self.steps + 10):
            self.step(i)
        return (time.perf_counter() - t0) * 1000 / self.steps


def measure(name, runner, rounds):
    times = sorted(runner.round_ms() for _ in range(rounds))
    print(json.dumps({"bench": name, "device": "cpu", "impl": "torch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "blas": blas_library(), "batch": runner.batch, "steps": runner.steps, "rounds": rounds,
                      "ms_per_step": round(times[len(times) // 2], 3), "ms_min": round(times[0], 3)}), flush=True)


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))


def serve(steps):
    runners = {"mlp": Runner(mlp(), 100, steps), "cnn": Runner(cnn(), 64, steps)}
    print(json.dumps({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads(), "blas": blas_library(),
                      "cpu_capability": torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else None}),
          flush=True)
    for line in sys.stdin:
        model = line.strip()
        print(json.dumps({"model": model, "ms_per_step": runners[model].round_ms()}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args()
    steps, rounds = args.steps, args.rounds
    torch.set_num_threads(2)
    torch.manual_seed(0)
    if args.serve:
        return serve(steps)
    measure("fashion-mnist-mlp", Runner(mlp(), 100, steps), rounds)
    measure("fashion-mnist-cnn", Runner(cnn(), 64, steps), rounds)


if __name__ == "__main__":
    main()
