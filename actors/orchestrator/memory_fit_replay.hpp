// The memory fit decisions a run took (msg::memory_fit_done, journaled as "memory_fit" events in
// events.jsonl), kept so that a rollback or a resumed run sends each one again to the rank that
// runs its step, which then splits the step as before: a step the forecast once changed runs
// the same way however often it is repeated. Pure: decisions in, requests out; reading the
// journal's text is the caller's (from_events takes a stream).
//
// A decision belongs to a slot (the rank's index and the world size), since the slot decides
// the samples of a step; one of another world size never applies. Bounded: at most `capacity`
// decisions, the oldest steps go first.
#pragma once

#include "messages/scheduling_messages.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <istream>
#include <map>
#include <tuple>
#include <vector>

namespace msomni::orchestrator {

class memory_fit_replay {
 public:
  explicit memory_fit_replay(size_t capacity = 100'000) : capacity_(capacity) {}

  // A decision taken (a later one for the same slot and step replaces it).
  void record(const msg::memory_fit& f);
  // The decisions for rank `rank` of `world` of steps after `after_step`, in step order, at most
  // `max`, each marked replay.
  std::vector<msg::memory_fit> for_slot(uint32_t rank, uint32_t world, uint64_t after_step, size_t max) const;
  size_t size() const { return fits_.size(); }

  // The memory_fit lines of an events.jsonl; a line that is not one, or is torn (the last line of
  // a journal cut off mid-write), is skipped and counted in `skipped`.
  static memory_fit_replay from_events(std::istream& in, size_t capacity, uint64_t& skipped);

 private:
  using key = std::tuple<uint64_t, uint32_t, uint32_t>;  // step, world, rank
  std::map<key, msg::memory_fit> fits_;
  size_t capacity_;
};

// The fields of a "memory_fit" event (what from_events reads back): slot, world_size,
// forecast_bytes, budget_bytes, batch {micro_batch, seq_len, samples {image, video, text},
// image_patches, video_patches, text_tokens}, parts, micro_batches_split, keyframe_cuts, fits,
// peak_bytes, replayed.
nlohmann::ordered_json memory_fit_fields(const msg::memory_fit_done& d);

}  // namespace msomni::orchestrator
