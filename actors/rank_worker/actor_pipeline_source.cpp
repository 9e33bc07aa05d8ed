// actor_pipeline_source (see actor_pipeline_source.hpp).
#include "actor_pipeline_source.hpp"

#include "memory_features.hpp"
#include "pipeline_source.hpp"

namespace msomni::rank_worker {

namespace {
data::pipeline_setup with_batch_memory(data::pipeline_setup setup, std::shared_ptr<std::pmr::memory_resource> memory) {
  // Ordinary memory when none is given, not owned (the default resource lives forever).
  setup.batch_memory = memory ? std::move(memory)
                              : std::shared_ptr<std::pmr::memory_resource>(std::shared_ptr<void>(), std::pmr::get_default_resource());
  return setup;
}
}  // namespace

actor_pipeline_source::actor_pipeline_source(caf::actor_system& sys, const config::job_config& cfg, data_slot slot,
                                             std::shared_ptr<std::pmr::memory_resource> batch_memory, data_watch watch)
    : pipe_(std::make_unique<data::actor_pipeline>(sys, with_batch_memory(pipeline_setup_for(cfg, std::move(watch)), std::move(batch_memory)),
                                                   order_slot_of(slot))) {}

model::micro_batch actor_pipeline_source::next() {
  const data::micro_batch& b = pipe_->next_batch();
  downgraded_ += downgraded_in(b);
  return pipe_->take_model_batch();  // packed by the tensor stage
}

void actor_pipeline_source::reslot(const data_slot& slot) { pipe_->reslot(order_slot_of(slot)); }

std::vector<msg::batch_features> actor_pipeline_source::upcoming_features(size_t max) const {
  std::vector<msg::batch_features> out;
  pipe_->visit_upcoming(max, [&out](const model::micro_batch& b) { out.push_back(features_of(b)); });
  return out;
}

std::vector<msg::bad_sample_count> actor_pipeline_source::bad_sample_totals() const {
  return bad_sample_totals_of(pipe_->bad_data());
}

bad_sample_listing actor_pipeline_source::bad_samples_listed() const { return bad_samples_listed_of(pipe_->bad_data()); }

}  // namespace msomni::rank_worker
