// failure_history (see failure_history.hpp).
#include "failure_history.hpp"

namespace msomni::orchestrator {

std::optional<std::string> failure_history::repeat_of(const std::string& rank, const std::string& reason,
                                                      bool replacement) const {
  if (!replacement) return std::nullopt;
  const auto it = first_rank_.find(reason);
  if (it == first_rank_.end() || it->second == rank) return std::nullopt;
  return it->second;
}

void failure_history::record(const std::string& rank, const std::string& reason) {
  if (first_rank_.size() >= reasons_max && !first_rank_.count(reason)) return;
  first_rank_.emplace(reason, rank);
}

}  // namespace msomni::orchestrator
