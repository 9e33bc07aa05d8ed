// Resharding across data-parallel world sizes (see reshard.hpp).
#include "reshard.hpp"

#include "checkpoint_error.hpp"

#include <algorithm>

namespace msomni::ckpt {

namespace {

bool has_prefix(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return name.starts_with(p); });
}

}  // namespace

index_range shard_range(uint64_t total, uint32_t world, uint32_t rank) {
  if (world == 0 || rank >= world) throw checkpoint_error("shard_range: rank outside world");
  const uint64_t base = total / world, extra = total % world;
  const uint64_t begin = rank * base + std::min<uint64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

std::vector<rank_state> reshard(const std::vector<rank_state>& old_ranks, uint32_t new_world,
                                const reshard_rules& rules) {
  if (old_ranks.empty() || new_world == 0)
    throw checkpoint_error("reshard: need at least one old and one new rank");
  std::vector<rank_state> out(new_world);
  const rank_state& first = old_ranks[0];
  for (const auto& t : first.tensors) {
    if (has_prefix(t.name, rules.replicated_prefixes)) {
      for (size_t r = 1; r < old_ranks.size(); ++r) {
        const tensor_entry* o = old_ranks[r].find_tensor(t.name);
        if (!o || o->shape != t.shape)
          throw checkpoint_error("reshard: replicated tensor '" + t.name +
                                 "' missing or shaped differently on old rank " +
                                 std::to_string(r));
      }
      for (auto& s : out) s.tensors.push_back(t);
    } else if (has_prefix(t.name, rules.sharded_prefixes)) {
      std::vector<float> whole;
      for (size_t r = 0; r < old_ranks.size(); ++r) {
        const tensor_entry* o = old_ranks[r].find_tensor(t.name);
        if (!o)
          throw checkpoint_error("reshard: sharded tensor '" + t.name + "' missing on old rank " +
                                 std::to_string(r));
        whole.insert(whole.end(), o->values.begin(), o->values.end());
      }
      for (uint32_t r = 0; r < new_world; ++r) {
        const index_range ir = shard_range(whole.size(), new_world, r);
        out[r].put_tensor(t.name, {static_cast<int64_t>(ir.end - ir.begin)},
                          std::vector<float>(whole.begin() + ir.begin, whole.begin() + ir.end));
      }
    }
  }
  // Per-rank entries (anything not replicated or sharded), tensors and blobs alike.
  for (uint32_t r = 0; r < new_world && r < old_ranks.size(); ++r) {
    for (const auto& t : old_ranks[r].tensors)
      if (!has_prefix(t.name, rules.replicated_prefixes) &&
          !has_prefix(t.name, rules.sharded_prefixes))
        out[r].tensors.push_back(t);
    for (const auto& b : old_ranks[r].blobs) out[r].blobs.push_back(b);
  }
  return out;
}

}  // namespace msomni::ckpt
