"""PyTorch anchor for bench/op_overhead.ts: the same tiny ops and the same tiny MLP training step in
PyTorch eager on the CPU with 1 thread (the ops are too small for intra-op threads to matter), so
what is timed is each op's dispatch overhead; prints the same JSON lines.

    /usr/bin/python3 bench/anchors/torch_op_overhead.py [--ops N] [--steps S] [--rounds R]
    /usr/bin/python3 bench/anchors/torch_op_overhead.py --serve [--ops N] [--steps S]
        one timed round per stdin line naming a case (add, add-chain, mul, relu, sum, matmul, mlp),
        answering {"case", "us_per_op"}, so that bench/op_overhead.ts can alternate its rounds with
        PyTorch's
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = ["add", "add-chain", "mul", "relu", "sum", "matmul", "mlp"]


class Cases:
    """Each case's inputs, made once; run(case) times one round and returns microseconds per op."""

    def __init__(self, ops, steps):
        self.ops, self.steps = ops, steps
        self.a = torch.randn(16)
        self.b = torch.randn(16)
        self.m = torch.randn(16, 16)
        self.model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.x = torch.randn(16, 32)
        self.y = torch.randint(0, 10, (16,))
        for case in CASES:  # warm-up: allocator, dispatch caches
            self.run(case)

    def run(self, case):
        a, b, m, n = self.a, self.b, self.m, self.ops
        t0 = time.perf_counter()
        if case == "add":
            for _ in range(n):
                c = a.add(b)
        elif case == "add-chain":
            x = a
            for _ in range(n):
                x = x.add(b)
        elif case == "mul":
            for _ in range(n):
                c = a.mul(b)
        elif case == "relu":
            for _ in range(n):
                c = a.relu()
        elif case == "sum":
            for _ in range(n):
                c = a.sum()
        elif case == "matmul":
            for _ in range(n):
                c = m.matmul(m)
        elif case == "mlp":
            for _ in range(self.steps):
                loss = F.cross_entropy(self.model(self.x), self.y)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
            return (time.perf_counter() - t0) * 1e6 / self.steps
        else:
            raise ValueError("unknown case " + case)
        return (time.perf_counter() - t0) * 1e6 / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cases = Cases(args.ops, args.steps)
    info = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    if args.serve:
        print(json.dumps({"ready": True, **info}), flush=True)
        for line in sys.stdin:
            case = line.strip()
            print(json.dumps({"case": case, "us_per_op": cases.run(case)}), flush=True)
        return
    for case in CASES:
        times = sorted(cases.run(case) for _ in range(args.rounds))
        print(json.dumps({"bench": "op-overhead", "case": case, "impl": "torch", **info, "rounds": args.rounds,
                          "us_per_op": round(times[len(times) // 2], 3), "us_min": round(times[0], 3)}), flush=True)


if __name__ == "__main__":
    main()
