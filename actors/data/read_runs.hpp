// Which upcoming samples of one shard one ranged GET serves (a pure core): each sample comes
// with its tar record (its members' headers, data and padding) and the bytes its reads cover;
// samples whose records lie together in the shard form a run, read by one GET from the first
// read's start to the last read's end.
//
// A run grows in shard order while it stays within run_bounds: at most max_samples samples
// and max_bytes bytes (a single larger sample is a run of its own), and the gaps between its
// records (bytes no sample of the run holds: other ranks' samples, samples not drawn yet)
// never above 1/gap_divisor of its records' bytes. So a run reads at most (1 + 1/16) x the
// records of its samples, and a shard read start to end costs one GET per max_samples samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace msomni::data {

struct run_item {
  uint64_t record_begin = 0, record_end = 0;  // the sample's tar record, [begin, end)
  uint64_t read_begin = 0, read_end = 0;      // what its reads cover, inside the record
};

struct run_bounds {
  uint64_t max_bytes = uint64_t{4} << 20;
  size_t max_samples = 256;
  uint64_t gap_divisor = 16;
};

struct read_run {
  uint64_t offset = 0, length = 0;  // the GET: [offset, offset + length)
  std::vector<size_t> items;        // indices into the items given, in shard order
};

// The runs covering `items` (each item in exactly one run), in shard order.
std::vector<read_run> plan_runs(const std::vector<run_item>& items, const run_bounds& bounds = {});

// The record of a sample whose members (tar order) start their data at `first_data` and end
// at `last_end`: from the first member's 512-byte header to the last one's padding.
run_item record_of(uint64_t first_data, uint64_t last_end, uint64_t read_begin, uint64_t read_end);

}  // namespace msomni::data
