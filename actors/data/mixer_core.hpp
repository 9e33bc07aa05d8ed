// The mixer's policy: which source fills the next batch slot. "balanced_by_weight" is a
// smooth weighted round-robin, so every window of draws holds the configured mix exactly
// (no random clumps of slow video); "fixed_weight" draws i.i.d. by weight from a seeded
// stream. Both are deterministic functions of their state, which checkpoints carry. The
// total rate under a slow modality is kept by the decode pool's adaptive quotas and deeper
// prefetch, not by changing the mix, so resumed runs see identical batches. The mixer draws
// the source of every global sample (global_order.hpp), on every rank alike: it has no rank.
#pragma once

#include "core/rng.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::data {

enum class mix_strategy : uint8_t { balanced_by_weight, fixed_weight };
mix_strategy parse_mix_strategy(const std::string& text);  // throws std::invalid_argument

struct mixer_state {
  rng_stream::state_type rng{};
  std::vector<int64_t> current;  // smooth round-robin accumulators, one per source
  bool operator==(const mixer_state&) const = default;
};

class mixer_core {
 public:
  mixer_core(std::vector<double> weights, mix_strategy strategy, uint64_t seed);

  uint32_t next_source();
  mixer_state state() const;
  void restore(const mixer_state& s);  // throws std::invalid_argument on a size mismatch
  size_t sources() const noexcept { return weights_.size(); }
  // The fraction of draws each source gets in the long run.
  double share(uint32_t source) const;

 private:
  std::vector<int64_t> weights_;  // weights in thousandths, so the arithmetic is exact
  int64_t total_ = 0;
  mix_strategy strategy_;
  rng_stream rng_;
  std::vector<int64_t> current_;
};

}  // namespace msomni::data
