// Weighted source selection for batch slots (see mixer_core.hpp).
#include "mixer_core.hpp"

#include <cmath>
#include <stdexcept>

namespace msomni::data {

mix_strategy parse_mix_strategy(const std::string& text) {
  if (text == "balanced_by_weight") return mix_strategy::balanced_by_weight;
  if (text == "fixed_weight") return mix_strategy::fixed_weight;
  throw std::invalid_argument("unknown data.mix_strategy '" + text + "'");
}

mixer_core::mixer_core(std::vector<double> weights, mix_strategy strategy, uint64_t seed)
    : strategy_(strategy), rng_(rng_stream::derive(seed, "data.mix")) {
  if (weights.empty()) throw std::invalid_argument("mixer: no data sources");
  for (double w : weights) {
    if (!(w > 0) || !std::isfinite(w)) throw std::invalid_argument("mixer: source weights must be positive");
    weights_.push_back(std::max<int64_t>(1, std::llround(w * 1000.0)));
    total_ += weights_.back();
  }
  current_.assign(weights_.size(), 0);
}

uint32_t mixer_core::next_source() {
  if (strategy_ == mix_strategy::fixed_weight) {
    int64_t r = int64_t(rng_.below(uint64_t(total_)));
    for (size_t i = 0; i < weights_.size(); ++i) {
      if (r < weights_[i]) return uint32_t(i);
      r -= weights_[i];
    }
    return uint32_t(weights_.size() - 1);
  }
  size_t best = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    current_[i] += weights_[i];
    if (current_[i] > current_[best]) best = i;
  }
  current_[best] -= total_;
  return uint32_t(best);
}

mixer_state mixer_core::state() const { return {rng_.state(), current_}; }

void mixer_core::restore(const mixer_state& s) {
  if (s.current.size() != weights_.size())
    throw std::invalid_argument("mixer state has " + std::to_string(s.current.size()) + " sources, pipeline has " +
                                std::to_string(weights_.size()));
  rng_ = rng_stream::from_state(s.rng);
  current_ = s.current;
}

double mixer_core::share(uint32_t source) const { return double(weights_.at(source)) / double(total_); }

}  // namespace msomni::data
