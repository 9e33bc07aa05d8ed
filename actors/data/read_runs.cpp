// Runs of a shard's upcoming samples (see read_runs.hpp).
#include "read_runs.hpp"

#include <algorithm>
#include <numeric>

namespace msomni::data {

run_item record_of(uint64_t first_data, uint64_t last_end, uint64_t read_begin, uint64_t read_end) {
  constexpr uint64_t block = 512;
  return {first_data >= block ? first_data - block : 0, (last_end + block - 1) / block * block, read_begin, read_end};
}

std::vector<read_run> plan_runs(const std::vector<run_item>& items, const run_bounds& bounds) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return items[a].record_begin != items[b].record_begin ? items[a].record_begin < items[b].record_begin
                                                           : items[a].read_begin < items[b].read_begin;
  });
  std::vector<read_run> runs;
  uint64_t record_end = 0, records = 0, gaps = 0, read_end = 0;
  for (const size_t i : order) {
    const run_item& it = items[i];
    const uint64_t record = it.record_end - std::min(it.record_end, it.record_begin);
    if (!runs.empty()) {
      read_run& r = runs.back();
      const uint64_t gap = it.record_begin > record_end ? it.record_begin - record_end : 0;
      const uint64_t new_read_end = std::max(read_end, it.read_end);
      const bool fits = r.items.size() < bounds.max_samples && new_read_end - r.offset <= bounds.max_bytes &&
                        (gaps + gap) * bounds.gap_divisor <= records + record && it.read_begin >= r.offset;
      if (fits) {
        r.items.push_back(i);
        records += record;
        gaps += gap;
        record_end = std::max(record_end, it.record_end);
        read_end = new_read_end;
        r.length = read_end - r.offset;
        continue;
      }
    }
    runs.push_back({it.read_begin, it.read_end - std::min(it.read_end, it.read_begin), {i}});
    record_end = it.record_end;
    records = record;
    gaps = 0;
    read_end = std::max(it.read_end, it.read_begin);
  }
  return runs;
}

}  // namespace msomni::data
