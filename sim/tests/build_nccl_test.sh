#!/bin/sh
# Builds and runs the simulated NCCL's unit tests: sim/tests/build_nccl_test.sh [outdir]
# Links the simulated runtime and the NCCL files with the engine stub (no kernels run here).
set -e
cd "$(dirname "$0")/../.."
out="${1:-${TMPDIR:-/tmp}/flockml_sim_nccl_test}"
mkdir -p "$out"
g++ -std=c++17 -O1 -g -Wall -Wextra -pthread -Isim/include -Isim -o "$out/nccl_test" \
  sim/runtime_*.cc sim/nccl_*.cc sim/tests/nccl_test.cc sim/tests/engine_stub.cc
"$out/nccl_test"
