// How far a remote source's reader hints ahead of its reads (a pure core). The reader holds
// a window of its next own draws hinted and not yet read, bounded in samples and bytes; when
// what is held falls to half the window in both, it hints the next chunk. A chunk is made of
// whole shards' worth of draws (the draws of one shard in one epoch: a group), so every shard
// is hinted at once and its draws can form long runs (read_runs.hpp); a group that does not
// fit in what is left of the window is hinted in part only when nothing else is hinted
// (a shard larger than the window), and the last group of the upcoming draws only when it is
// known to be complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace msomni::data {

struct read_ahead_window {
  uint64_t samples = 0;  // draws hinted and not yet read (0: no read-ahead)
  uint64_t bytes = 0;    // their records' bytes
};

struct ahead_draw {
  uint64_t group = 0;    // the same for the draws of one shard in one epoch
  uint64_t bytes = 0;    // its record's bytes (0 when nothing of it is read ahead)
};

// True when `held` (what is hinted and not read yet) has fallen to half the window in both
// samples and bytes: time to hint the next chunk.
bool wants_more(const read_ahead_window& window, const read_ahead_window& held);

// How many of `upcoming` (the next own draws not hinted yet, in the order they are read) to
// hint now: whole groups while they fit in the window less `held`; with nothing held and the
// first group too large, as much of it as fits (at least one draw). `tail_complete`: the last
// group of `upcoming` holds every draw of its shard (else it is left for a later chunk).
size_t next_chunk(std::span<const ahead_draw> upcoming, bool tail_complete, const read_ahead_window& window,
                  const read_ahead_window& held);

}  // namespace msomni::data
