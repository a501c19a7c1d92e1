#!/usr/bin/python3
"""SGEMM anchor: numpy (OpenBLAS, 2 threads) on the same sizes as bench/gemm.ts, same JSON shape."""
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
import numpy as np

sizes = [int(s) for s in sys.argv[1:]] or [256, 512, 1024, 2048]
for n in sizes:
    a = np.random.randn(n, n).astype(np.float32)
    b = np.random.randn(n, n).astype(np.float32)
    a @ b
    iters = max(3, round(2e9 / (2 * n ** 3)))
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        for _ in range(iters):
            a @ b
        best = min(best, (time.perf_counter() - t0) / iters)
    ms = best * 1e3
    print(json.dumps({"bench": "gemm", "device": "cpu", "dtype": "f32", "n": n, "impl": "numpy-openblas",
                      "threads": int(os.environ["OPENBLAS_NUM_THREADS"]), "ms": round(ms, 3),
                      "gflops": round(2 * n ** 3 / (ms * 1e6), 2)}))
