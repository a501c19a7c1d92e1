#!/usr/bin/python3
"""SGEMM anchor: numpy on 2 threads (OpenBLAS when it is the loaded BLAS; the "blas" field says
which) on the same sizes as bench/gemm.ts, same JSON shape.

    /usr/bin/python3 bench/anchors/numpy_gemm.py [N ...]    one line per size
    /usr/bin/python3 bench/anchors/numpy_gemm.py --serve    one round per stdin line "N ITERS",
                                                            answering {"n", "ms"} (bench/gemm.ts)
"""
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
import numpy as np
from blas_library import blas_library

matrices = {}


def round_ms(n, iters):
    if n not in matrices:
        a = np.random.randn(n, n).astype(np.float32)
        b = np.random.randn(n, n).astype(np.float32)
        a @ b
        matrices[n] = (a, b)
    a, b = matrices[n]
    t0 = time.perf_counter()
    for _ in range(iters):
        a @ b
    return (time.perf_counter() - t0) * 1e3 / iters


def main():
    if sys.argv[1:] == ["--serve"]:
        print(json.dumps({"ready": True, "blas": blas_library(), "threads": int(os.environ["OPENBLAS_NUM_THREADS"])}), flush=True)
        for line in sys.stdin:
            n, iters = (int(v) for v in line.split())
            print(json.dumps({"n": n, "ms": round_ms(n, iters)}), flush=True)
        return
    for n in [int(s) for s in sys.argv[1:]] or [256, 512, 1024, 2048]:
        iters = max(3, round(2e9 / (2 * n ** 3)))
        ms = min(round_ms(n, iters) for _ in range(2))
        print(json.dumps({"bench": "gemm", "device": "cpu", "dtype": "f32", "n": n, "impl": "numpy", "blas": blas_library(),
                          "threads": int(os.environ["OPENBLAS_NUM_THREADS"]), "ms": round(ms, 3),
                          "gflops": round(2 * n ** 3 / (ms * 1e6), 2)}))


if __name__ == "__main__":
    main()
