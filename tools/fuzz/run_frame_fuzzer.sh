#!/usr/bin/env bash
# Builds the libFuzzer frame target with clang (separate build dir) and fuzzes for SECONDS
# (default 60), starting from the checked-in corpus; new crashers fail the run.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENABLE_CUDA=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMSOMNI_BUILD_FUZZERS=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,fuzzer-no-link" >/dev/null
cmake --build build-fuzz --target frame_fuzzer -j2
mkdir -p build-fuzz/corpus
cp tests/transport/frame_corpus/* build-fuzz/corpus/ 2>/dev/null || true
build-fuzz/tools/fuzz/frame_fuzzer -max_total_time="$seconds" -max_len=4096 build-fuzz/corpus
