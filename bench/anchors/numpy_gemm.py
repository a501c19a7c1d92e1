#!/usr/bin/python3
"""SGEMM anchor: numpy on 2 threads (OpenBLAS when it is the loaded BLAS; the "blas" field says
which) on the same sizes as bench/gemm.ts, same JSON shape: N is the square N×N·N×N product, MxKxN a
linear layer's x·Wᵀ with x (M, K) and W (N, K).

    /usr/bin/python3 bench/anchors/numpy_gemm.py [N | MxKxN ...]    one line per size
    /usr/bin/python3 bench/anchors/numpy_gemm.py --serve    one round per stdin line "SIZE ITERS",
                                                            answering {"size", "ms"} (bench/gemm.ts)
"""
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
import numpy as np
from blas_library import blas_library

matrices = {}


def dims(size):
    """(M, K, N) of a size: "N" is square, "MxKxN" a linear layer's x·Wᵀ."""
    parts = [int(v) for v in size.split("x")]
    return (parts[0],) * 3 if len(parts) == 1 else tuple(parts)


def round_ms(size, iters):
    if size not in matrices:
        m, k, n = dims(size)
        a = np.random.randn(m, k).astype(np.float32)
        b = np.random.randn(n, k).astype(np.float32).T if "x" in size else np.random.randn(k, n).astype(np.float32)
        a @ b
        matrices[size] = (a, b)
    a, b = matrices[size]
    t0 = time.perf_counter()
    for _ in range(iters):
        a @ b
    return (time.perf_counter() - t0) * 1e3 / iters


def main():
    if sys.argv[1:] == ["--serve"]:
        print(json.dumps({"ready": True, "blas": blas_library(), "threads": int(os.environ["OPENBLAS_NUM_THREADS"])}), flush=True)
        for line in sys.stdin:
            size, iters = line.split()
            print(json.dumps({"size": size, "ms": round_ms(size, int(iters))}), flush=True)
        return
    for size in sys.argv[1:] or ["256", "512", "1024", "2048"]:
        m, k, n = dims(size)
        iters = max(3, round(2e9 / (2 * m * k * n)))
        ms = min(round_ms(size, iters) for _ in range(2))
        key = {"shape": size} if "x" in size else {"n": n}
        print(json.dumps({"bench": "gemm", "device": "cpu", "dtype": "f32", **key, "impl": "numpy", "blas": blas_library(),
                          "threads": int(os.environ["OPENBLAS_NUM_THREADS"]), "ms": round(ms, 3),
                          "gflops": round(2 * m * k * n / (ms * 1e6), 2)}))


if __name__ == "__main__":
    main()
