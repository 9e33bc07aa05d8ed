// The frame decoder's fuzz entry: runs one byte string through everything the gateway does
// with an incoming frame (header, envelope, CAF message decode). Shared by the libFuzzer
// target and the malformed-frame corpus test. Returns 1 when the frame would be delivered.
#pragma once

#include <cstddef>
#include <cstdint>

int msomni_fuzz_frame(const uint8_t* data, size_t size);
