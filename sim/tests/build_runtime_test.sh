#!/bin/sh
# Builds and runs the simulated runtime's unit tests: sim/tests/build_runtime_test.sh [outdir]
# Links the real kernel engine (sim/engine*.cc, Boost.Context) when it is there and builds,
# else sim/tests/engine_stub.cc. Runs twice: with peer access, and with FLOCKML_CUDA_SIM_PEER=0.
set -e
cd "$(dirname "$0")/../.."
out="${1:-${TMPDIR:-/tmp}/flockml_sim_runtime_test}"
mkdir -p "$out"
flags="-std=c++17 -O1 -g -Wall -Wextra -pthread -Isim/include -Isim"
runtime="sim/runtime_*.cc sim/tests/runtime_test.cc"
engine=""
if ls sim/engine*.cc >/dev/null 2>&1 && [ -z "$FLOCK_SIM_TEST_STUB" ]; then
  if g++ $flags -o "$out/runtime_test" $runtime sim/engine*.cc -lboost_context 2>"$out/engine_build.log"; then
    engine="sim/engine*.cc"
  else
    echo "engine did not build (see $out/engine_build.log); using the stub"
  fi
fi
if [ -z "$engine" ]; then
  g++ $flags -o "$out/runtime_test" $runtime sim/tests/engine_stub.cc
fi
"$out/runtime_test"
FLOCKML_CUDA_SIM_PEER=0 "$out/runtime_test"
