// The data pipeline's checkpoint record as bytes: every source's cursor and the mixer state
// after the last delivered batch. A small versioned little-endian format of our own, so a
// checkpoint shard can hold it without knowing CAF; decoding validates every length.
#pragma once

#include "flow_cores.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace msomni::data {

std::vector<uint8_t> encode_position(const pipeline_position& p);
// Throws std::invalid_argument naming what is wrong when the bytes are not a position.
pipeline_position decode_position(std::span<const uint8_t> bytes);

}  // namespace msomni::data
