// bad_sample_ledger (see bad_sample_ledger.hpp).
#include "bad_sample_ledger.hpp"

#include <algorithm>

namespace msomni::orchestrator {

std::vector<std::string> bad_sample_ledger::on_seen(const msg::bad_samples_seen& m) {
  std::vector<std::string> notes;
  for (const auto& s : m.samples) {
    auto it = by_key_.find(s.key);
    if (it == by_key_.end()) {
      if (by_key_.size() >= listed_max) {
        unlisted_draws_ += s.draws;
        continue;
      }
      it = by_key_.emplace(s.key, entry{s.key, s.reason, s.cause, 0, m.step, m.rank}).first;
      notes.push_back(s.key + ": " + s.reason + (s.cause.empty() ? "" : " (" + s.cause + ")") + ", first drawn by rank " +
                      std::to_string(m.rank) + " in step " + std::to_string(m.step) +
                      (by_key_.size() == listed_max ? "; the listing is full, later samples are only counted" : ""));
    }
    it->second.draws += s.draws;
  }
  return notes;
}

std::vector<bad_sample_ledger::entry> bad_sample_ledger::entries() const {
  std::vector<entry> out;
  out.reserve(by_key_.size());
  for (const auto& [key, e] : by_key_) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const entry& a, const entry& b) { return a.draws > b.draws; });
  return out;
}

std::vector<std::string> bad_sample_lines(const std::vector<bad_sample_ledger::entry>& entries, uint64_t unlisted_draws,
                                          size_t max_lines) {
  std::vector<std::string> out;
  for (size_t i = 0; i < entries.size() && i < max_lines; ++i) {
    const auto& e = entries[i];
    out.push_back(e.key + "  " + e.reason + " x" + std::to_string(e.draws) + (e.cause.empty() ? "" : " (" + e.cause + ")"));
  }
  if (entries.size() > max_lines)
    out.push_back("... " + std::to_string(entries.size() - max_lines) + " more samples listed in summary.json");
  if (unlisted_draws > 0)
    out.push_back("... and " + std::to_string(unlisted_draws) + " draws of samples past the listing's " +
                  std::to_string(bad_sample_ledger::listed_max));
  return out;
}

}  // namespace msomni::orchestrator
