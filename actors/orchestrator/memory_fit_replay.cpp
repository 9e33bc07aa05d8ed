// memory_fit_replay (see memory_fit_replay.hpp).
#include "memory_fit_replay.hpp"

#include <string>

namespace msomni::orchestrator {

void memory_fit_replay::record(const msg::memory_fit& f) {
  auto& kept = fits_[key{f.step, f.world_size, f.rank}];
  kept = f;
  kept.replay = false;
  while (fits_.size() > capacity_) fits_.erase(fits_.begin());
}

std::vector<msg::memory_fit> memory_fit_replay::for_slot(uint32_t rank, uint32_t world, uint64_t after_step,
                                                         size_t max) const {
  std::vector<msg::memory_fit> out;
  for (auto it = fits_.upper_bound(key{after_step, UINT32_MAX, UINT32_MAX}); it != fits_.end() && out.size() < max; ++it) {
    const auto& [step, w, r] = it->first;
    if (w != world || r != rank) continue;
    out.push_back(it->second);
    out.back().replay = true;
  }
  return out;
}

nlohmann::ordered_json memory_fit_fields(const msg::memory_fit_done& d) {
  const auto& b = d.fit.batch;
  nlohmann::ordered_json batch{{"micro_batch", b.micro_batch},
                               {"seq_len", b.seq_len},
                               {"samples", {{"image", b.image_samples}, {"video", b.video_samples}, {"text", b.text_samples}}},
                               {"image_patches", b.image_patches},
                               {"video_patches", b.video_patches},
                               {"text_tokens", b.text_tokens}};
  return {{"slot", d.fit.rank},
          {"world_size", d.fit.world_size},
          {"forecast_bytes", d.fit.forecast_bytes},
          {"budget_bytes", d.fit.budget_bytes},
          {"batch", std::move(batch)},
          {"parts", d.parts},
          {"micro_batches_split", d.micro_batches_split},
          {"keyframe_cuts", d.keyframe_cuts},
          {"fits", d.fits},
          {"peak_bytes", d.peak_bytes},
          {"replayed", d.fit.replay}};
}

memory_fit_replay memory_fit_replay::from_events(std::istream& in, size_t capacity, uint64_t& skipped) {
  memory_fit_replay out(capacity);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"memory_fit\"") == std::string::npos) continue;  // cheap: most lines are other events
    try {
      const auto j = nlohmann::json::parse(line);
      if (j.value("event", "") != "memory_fit") continue;
      msg::memory_fit f;
      f.rank_name = j.at("rank").get<std::string>();
      f.step = j.at("step").get<uint64_t>();
      f.rank = j.at("slot").get<uint32_t>();
      f.world_size = j.at("world_size").get<uint32_t>();
      f.forecast_bytes = j.at("forecast_bytes").get<double>();
      f.budget_bytes = j.at("budget_bytes").get<double>();
      const auto& b = j.at("batch");
      f.batch.micro_batch = b.at("micro_batch").get<uint32_t>();
      f.batch.seq_len = b.at("seq_len").get<uint32_t>();
      f.batch.image_samples = b.at("samples").at("image").get<uint32_t>();
      f.batch.video_samples = b.at("samples").at("video").get<uint32_t>();
      f.batch.text_samples = b.at("samples").at("text").get<uint32_t>();
      f.batch.image_patches = b.at("image_patches").get<uint64_t>();
      f.batch.video_patches = b.at("video_patches").get<uint64_t>();
      f.batch.text_tokens = b.at("text_tokens").get<uint64_t>();
      if (f.world_size == 0 || f.rank >= f.world_size || f.step == 0) throw std::invalid_argument("bad slot or step");
      out.record(f);
    } catch (const std::exception&) {
      ++skipped;
    }
  }
  return out;
}

}  // namespace msomni::orchestrator
