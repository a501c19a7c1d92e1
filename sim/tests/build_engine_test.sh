#!/bin/sh
# Builds and runs the kernel engine's unit tests: sim/tests/build_engine_test.sh [outdir] [--perf]
# The test file is device code, so it is compiled as cuda/*.cu are in a SIM build (force-included
# sim/cuda_sim.h); it stubs sim::launch/enqueue_host_op and needs no runtime.
set -e
cd "$(dirname "$0")/../.."
out="${1:-build/sim_engine_test}"
mkdir -p "$out"
g++ -std=c++17 -O2 -g -Wall -Wextra -pthread -include sim/cuda_sim.h -Isim/include -Isim -DFLOCK_CUDA_SIM \
  -o "$out/engine_test" sim/tests/engine_test.cc sim/engine_block.cc sim/engine_warp.cc sim/engine_grid.cc -lboost_context
"$out/engine_test"
if [ "$2" = "--perf" ]; then
  FLOCKML_CUDA_SIM_WORKERS=1 "$out/engine_test" --perf
  "$out/engine_test" --perf
fi
