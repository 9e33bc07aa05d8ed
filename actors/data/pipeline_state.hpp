// The data pipeline's checkpoint record as bytes: the global order's position (samples
// consumed, the mixer, draws per source by name) and the micro-batches of the next step
// already delivered. Nothing in it names a rank or a world size. A small versioned
// little-endian format of our own, so a checkpoint shard can hold it without knowing CAF;
// decoding validates every length. Version 1 (per-rank shard cursors) is refused: that order
// dealt shards to ranks and cannot be continued in the global order.
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
