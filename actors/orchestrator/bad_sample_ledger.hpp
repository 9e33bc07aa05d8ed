// The distinct bad samples of a job, as its ranks report them (msg::bad_samples_seen): each
// once, by key ("<shard>/<member key>", or a shard's name for damage of a whole shard), with
// its reason, its cause in words, how often it was drawn over all ranks, and the step and rank
// that first drew it. A bad file of a small source is drawn every epoch: the counts by reason
// count draws, this names the files. Samples whose names say another format than their bytes
// (mismatched_name) are listed too, though they train. Bounded: at most listed_max samples are
// listed; the draws of later ones are counted as unlisted.
// Pure: no clock, no I/O; the shell journals the notes it returns and renders the list.
#pragma once

#include "messages/training_messages.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msomni::orchestrator {

class bad_sample_ledger {
 public:
  static constexpr size_t listed_max = 64;

  struct entry {
    std::string key, reason, cause;
    uint64_t draws = 0;
    uint64_t first_step = 0;
    uint32_t first_rank = 0;
  };

  // Adds a rank's report; returns one events.jsonl note per sample listed for the first time.
  std::vector<std::string> on_seen(const msg::bad_samples_seen& m);

  // The listed samples, most drawn first (then by key).
  std::vector<entry> entries() const;
  uint64_t unlisted_draws() const { return unlisted_draws_; }
  bool empty() const { return by_key_.empty() && unlisted_draws_ == 0; }

 private:
  std::map<std::string, entry> by_key_;
  uint64_t unlisted_draws_ = 0;
};

// For a person: one line per listed sample, at most `max_lines`, then how many more there are:
// "shard-000001.tar/clip_3  corrupt_video x10 (a cut file: ...)".
std::vector<std::string> bad_sample_lines(const std::vector<bad_sample_ledger::entry>& entries, uint64_t unlisted_draws,
                                          size_t max_lines);

}  // namespace msomni::orchestrator
