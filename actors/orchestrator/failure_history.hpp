// Which rank failures repeat. A rank that reports its own error text (msg::rank_failed) and
// was started after an earlier rank went down (a replacement, or any rank started since) and
// now reports, word for word, a reason some other rank reported before, shows the failure
// follows the job rather than a process or a machine: the job ends with that reason at once
// instead of spending its remaining recoveries on replacements that would fail alike.
// Observed ends without the rank's words (an exit code, missed heartbeats) never count as
// repeats: they name no cause. Pure and bounded (reasons_max distinct reasons kept).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace msomni::orchestrator {

class failure_history {
 public:
  static constexpr size_t reasons_max = 64;

  // The rank that reported `reason` first, when `rank` (a replacement when `replacement`)
  // repeats it; nullopt when this failure is new or the rank is not a replacement.
  std::optional<std::string> repeat_of(const std::string& rank, const std::string& reason, bool replacement) const;
  // Remembers `reason` (the first rank to report it keeps it; at most reasons_max reasons).
  void record(const std::string& rank, const std::string& reason);
  size_t size() const { return first_rank_.size(); }

 private:
  std::map<std::string, std::string> first_rank_;  // reason -> the rank that reported it first
};

}  // namespace msomni::orchestrator
