// The read-ahead window of a remote source (see read_ahead_window.hpp).
#include "read_ahead_window.hpp"

#include <algorithm>

namespace msomni::data {

bool wants_more(const read_ahead_window& window, const read_ahead_window& held) {
  return window.samples > 0 && held.samples * 2 <= window.samples && held.bytes * 2 <= window.bytes;
}

size_t next_chunk(std::span<const ahead_draw> upcoming, bool tail_complete, const read_ahead_window& window,
                  const read_ahead_window& held) {
  const uint64_t room_samples = window.samples - std::min(window.samples, held.samples);
  const uint64_t room_bytes = window.bytes - std::min(window.bytes, held.bytes);
  size_t taken = 0;
  uint64_t bytes = 0;
  while (taken < upcoming.size()) {
    size_t end = taken;
    uint64_t group_bytes = 0;
    while (end < upcoming.size() && upcoming[end].group == upcoming[taken].group) group_bytes += upcoming[end++].bytes;
    const bool complete = end < upcoming.size() || tail_complete;
    if (complete && end <= room_samples && bytes + group_bytes <= room_bytes) {
      taken = end;
      bytes += group_bytes;
      continue;
    }
    // A group that would fit an empty window waits for room; one larger than the window (or
    // not complete yet: longer than planned) is hinted in parts, what fits of it now.
    if (taken > 0 || (complete && end <= window.samples && group_bytes <= window.bytes)) break;
    size_t k = 0;
    uint64_t b = 0;
    while (k < end && k < room_samples && (b + upcoming[k].bytes <= room_bytes || (k == 0 && held.samples == 0)))
      b += upcoming[k++].bytes;
    return k;
  }
  return taken;
}

}  // namespace msomni::data
