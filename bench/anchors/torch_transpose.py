"""PyTorch anchor for bench/transpose.ts: x.transpose(-2, -1).contiguous() on the CPU, the copy a
transposed operand costs, with the same shapes and dtypes, 2 threads.

    /usr/bin/python3 bench/anchors/torch_transpose.py --serve [--iters N]
        one timed round per stdin line "ROWSxCOLS DTYPE", answering {"case", "us_per_call"}
"""
import argparse
import json
import sys
import time

import torch

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64, "u8": torch.uint8}


def round_us(x, iters):
    x.transpose(-2, -1).contiguous()
    t0 = time.perf_counter()
    for _ in range(iters):
        x.transpose(-2, -1).contiguous()
    return (time.perf_counter() - t0) * 1e6 / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(2)
    inputs = {}
    print(json.dumps({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        case = line.strip()
        shape, dtype = case.split(" ")
        if case not in inputs:
            dims = [int(s) for s in shape.split("x")]
            inputs[case] = (torch.rand(*dims) * 100).to(DTYPES[dtype])
        print(json.dumps({"case": case, "us_per_call": round_us(inputs[case], args.iters)}), flush=True)


if __name__ == "__main__":
    main()
