"""PyTorch anchor for the deep-MLP part of bench/amp.ts: the same 16-layer MLP (width 2048, batch
256, SGD, gradients zero-filled rather than freed), with and without checkpointing every 4 layers
(torch.utils.checkpoint, use_reentrant=False, the last segment run plainly as checkpoint_sequential
does), one variant per process; prints one JSON line with the fields bench/amp.ts prints.

    /usr/bin/python3 bench/anchors/torch_checkpoint_memory.py plain|checkpoint [--steps N]

PyTorch keeps no peak statistics for CPU memory, so the step runs once under a TorchDispatchMode
that reads glibc's heap in use (mallinfo2: bytes in use in the main arena + mmapped blocks) after
every aten op, forward and backward; the peak over those samples, above the heap in use before the
step, is the step's peak above its weights and gradients. Allocations inside an op that it frees
before returning (BLAS packing) are not seen, as flockml's fl.memory() does not count its scratch.
"""
import argparse
import ctypes
import json
import time

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint
from blas_library import blas_library


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
    ]


libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2


def heap_in_use():
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


class PeakHeap(TorchDispatchMode):
    """Samples the heap in use after every op dispatched while it is active."""

    def __init__(self):
        super().__init__()
        self.peak = heap_in_use()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.peak = max(self.peak, heap_in_use())
        return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("variant", choices=["plain", "checkpoint"])
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    layers = []
    for _ in range(16):
        layers += [nn.Linear(2048, 2048), nn.ReLU()]
    model = nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 2048)
    per = len(layers) // 4
    segments = [nn.Sequential(*layers[s * per : (s + 1) * per]) for s in range(4)]

    def forward():
        if args.variant == "plain":
            return model(x)
        h = x
        for seg in segments[:-1]:
            h = checkpoint(seg, h, use_reentrant=False)
        return segments[-1](h)

    held = {}

    def step(measure=False):
        opt.zero_grad(set_to_none=False)
        y = forward()
        if measure:
            held["after_forward"] = heap_in_use()
        loss = y.square().mean()
        loss.backward()
        opt.step()

    # As bench/amp.ts's weights_mb: what is allocated before the first step, the weights and the batch.
    weights = sum(p.numel() * p.element_size() for p in model.parameters()) + x.numel() * x.element_size()
    step()  # warm-up: the gradients now exist, zero-filled by each step
    before = heap_in_use()
    mode = PeakHeap()
    with mode:
        step(measure=True)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    ms = (time.perf_counter() - t0) * 1000 / args.steps
    mb = lambda b: round(b / 2**20, 1)
    print(
        json.dumps(
            {
                "bench": "deep-mlp-16x2048",
                "impl": "torch",
                "torch": torch.__version__,
                "variant": args.variant,
                "device": "cpu",
                "threads": torch.get_num_threads(),
                "blas": blas_library(),
                "batch": 256,
                "steps": args.steps,
                "ms_per_step": round(ms, 1),
                "weights_mb": mb(weights),
                "grads_mb": mb(weights - x.numel() * x.element_size()),
                "peak_above_weights_mb": mb(weights + mode.peak - before),
                "peak_above_model_state_mb": mb(mode.peak - before),
                "held_after_forward_mb": mb(held["after_forward"] - before),
            }
        )
    )


if __name__ == "__main__":
    main()
