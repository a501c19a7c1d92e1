"""Which BLAS library this process loaded (from /proc/self/maps), for the anchors' JSON lines: on
Debian, numpy and PyTorch reach BLAS through libblas.so.3, which may be the slow reference BLAS
unless OpenBLAS is installed, or put first on LD_LIBRARY_PATH (the benches' --openblas DIR)."""
import os


def blas_library():
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.rsplit("/", 1)[-1]}
    except OSError:
        return "unknown"
    names = sorted(os.path.basename(p) for p in libs)
    return ",".join(names) or "none"
