// Loading a checkpoint at a different number of data-parallel replicas. Entries are sorted
// by name prefix into three kinds:
//   replicated  (default "param/")  identical on every rank: rank 0's copy goes to all
//   sharded     (default "optim/")  a flat 1-D slice per rank: concatenated in rank order,
//                                   then re-split with shard_range (ZeRO-1 style)
//   per-rank    everything else     (RNG states, data cursors): new rank r keeps old rank r's
//                                   when r existed; new ranks get none and must derive theirs
// The optimizer that shards its state must use shard_range too, so both sides agree.
#pragma once

#include "rank_state.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::ckpt {

struct reshard_rules {
  std::vector<std::string> replicated_prefixes{"param/"};
  std::vector<std::string> sharded_prefixes{"optim/"};
};

struct index_range {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Rank `rank`'s contiguous slice of `total` elements split over `world` ranks: the first
// total % world ranks get one extra element.
index_range shard_range(uint64_t total, uint32_t world, uint32_t rank);

// Throws checkpoint_error when replicated entries differ in shape between ranks or a sharded
// entry is missing on some rank.
std::vector<rank_state> reshard(const std::vector<rank_state>& old_ranks, uint32_t new_world,
                                const reshard_rules& rules = {});

}  // namespace msomni::ckpt
