"""PyTorch anchor for bench/fashion_mnist.ts: the same models, batch sizes, optimizer and step
count on the CPU with 2 threads; prints the same JSON lines.

    /usr/bin/python3 bench/anchors/torch_fashion_mnist.py [--steps N] [--rounds R]
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DIR = os.environ.get("FLOCKML_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def load(limit):
    with gzip.open(os.path.join(DIR, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16)[: limit * 784].reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(DIR, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:limit]
    return torch.from_numpy(x.astype(np.float32) / 255), torch.from_numpy(y.astype(np.int64))


def measure(name, model, batch, steps, rounds):
    x, y = load(batch * (steps + 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(i):
        xb, yb = x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch]
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for i in range(10):
        step(i)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for i in range(10, steps + 10):
            step(i)
        times.append((time.perf_counter() - t0) * 1000 / steps)
    times.sort()
    print(json.dumps({"bench": name, "device": "cpu", "impl": "torch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "batch": batch, "steps": steps, "rounds": rounds, "ms_per_step": round(times[len(times) // 2], 3),
                      "ms_min": round(times[0], 3)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    steps, rounds = args.steps, args.rounds
    torch.set_num_threads(2)
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    cnn = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
    measure("fashion-mnist-mlp", mlp, 100, steps, rounds)
    measure("fashion-mnist-cnn", cnn, 64, steps, rounds)


if __name__ == "__main__":
    main()
