"""Anchor for bench/allreduce.ts: the same sweep with PyTorch's gloo backend on local ranks.

    /usr/bin/python3 bench/anchors/torch_allreduce.py [--ranks 2,4] [--min-bytes N] [--max-bytes N]
Prints the same JSON lines with "backend": "gloo".
"""
import argparse
import json
import os
import random
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def iters_for(nbytes):
    return max(5, min(50, (64 << 20) // nbytes))


def worker(rank, n, port, min_bytes, max_bytes):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=n)
    nbytes = min_bytes
    while nbytes <= max_bytes:
        t = torch.ones(nbytes // 4)
        dist.all_reduce(t)
        dist.all_reduce(t)
        times = []
        for _ in range(iters_for(nbytes)):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times.append((time.perf_counter() - t0) * 1e3)
        check = torch.ones(min(nbytes // 4, 1024))
        dist.all_reduce(check)
        wrong = int((check != n).sum())
        ms = statistics.median(times)
        algbw = nbytes / (ms / 1e3) / 1e9
        if rank == 0:
            print(json.dumps({"bench": "allreduce", "backend": "gloo", "ranks": n, "bytes": nbytes, "iters": len(times),
                              "ms": round(ms, 3), "algbw_gbps": round(algbw, 3),
                              "busbw_gbps": round(algbw * 2 * (n - 1) / n, 3), "wrong": wrong}), flush=True)
        nbytes *= 4
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--min-bytes", type=int, default=4096)
    p.add_argument("--max-bytes", type=int, default=256 << 20)
    a = p.parse_args()
    for n in map(int, a.ranks.split(",")):
        mp.spawn(worker, args=(n, random.randint(20000, 40000), a.min_bytes, a.max_bytes), nprocs=n, join=True)


if __name__ == "__main__":
    main()
