// pipeline_source (see pipeline_source.hpp).
#include "pipeline_source.hpp"

#include "config/config_loader.hpp"
#include "model_batch.hpp"

namespace msomni::rank_worker {

namespace {

// The pipeline resolves data paths as given; configs name them relative to themselves.
config::job_config with_resolved_paths(config::job_config cfg) {
  for (auto& s : cfg.data.sources)
    if (s.uri.rfind("synthetic://", 0) != 0) s.uri = config::resolve_data_path(cfg, s.uri).string();
  return cfg;
}

}  // namespace

data::pipeline_setup pipeline_setup_for(const config::job_config& cfg, data_watch watch) {
  auto setup = data::make_pipeline_setup(with_resolved_paths(cfg));
  setup.registry = std::move(watch.registry);
  setup.live = std::move(watch.live);
  return setup;
}

data::order_slot order_slot_of(const data_slot& s) { return {s.rank, s.world, s.grad_accum, s.micro_batch}; }

std::vector<msg::bad_sample_count> bad_sample_totals_of(const data::bad_data_counts& bad) {
  std::vector<msg::bad_sample_count> out;
  for (int i = 0; i < data::bad_reason_count; ++i) out.push_back({data::to_string(data::bad_reason(i)), bad.count[size_t(i)]});
  return out;
}

bad_sample_listing bad_samples_listed_of(const data::bad_data_counts& bad) {
  bad_sample_listing out;
  out.totals = bad_sample_totals_of(bad);
  out.mismatched = bad.mismatched;
  for (const auto& [key, s] : bad.samples) out.samples.push_back({key, s.reason, s.cause, s.draws});
  return out;
}

uint64_t downgraded_in(const data::micro_batch& b) {
  uint64_t n = 0;
  for (uint8_t d : b.downgraded) n += d;
  return n;
}

bool all_synthetic(const config::job_config& cfg) {
  for (const auto& s : cfg.data.sources)
    if (s.uri.rfind("synthetic://", 0) != 0) return false;
  return true;
}

pipeline_source::pipeline_source(const config::job_config& cfg, data_slot slot,
                                 std::shared_ptr<std::pmr::memory_resource> batch_memory, data_watch watch)
    : pipe_(std::make_unique<data::data_pipeline>(pipeline_setup_for(cfg, std::move(watch)), order_slot_of(slot))),
      slot_(slot),
      batch_memory_(std::move(batch_memory)) {}

void pipeline_source::reslot(const data_slot& slot) {
  pipe_->reslot(order_slot_of(slot));
  slot_ = slot;
}

std::vector<msg::bad_sample_count> pipeline_source::bad_sample_totals() const {
  return bad_sample_totals_of(pipe_->bad_data());
}

bad_sample_listing pipeline_source::bad_samples_listed() const { return bad_samples_listed_of(pipe_->bad_data()); }

model::micro_batch pipeline_source::next() {
  const auto b = pipe_->next_batch();
  downgraded_ += downgraded_in(b);
  return data::to_model_batch(b, batch_memory_or_default(batch_memory_));
}

}  // namespace msomni::rank_worker
