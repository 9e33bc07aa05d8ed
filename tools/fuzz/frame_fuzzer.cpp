// libFuzzer target for the frame decoder: `tools/fuzz/run_frame_fuzzer.sh SECONDS`.
#include "frame_fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  msomni_fuzz_frame(data, size);
  return 0;
}
