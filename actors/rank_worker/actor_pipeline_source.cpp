// actor_pipeline_source (see actor_pipeline_source.hpp).
#include "actor_pipeline_source.hpp"

#include "pipeline_source.hpp"

namespace msomni::rank_worker {

actor_pipeline_source::actor_pipeline_source(caf::actor_system& sys, const config::job_config& cfg, data_slot slot)
    : pipe_(std::make_unique<data::actor_pipeline>(sys, pipeline_setup_for(cfg), order_slot_of(slot))) {}

model::micro_batch actor_pipeline_source::next() {
  const data::micro_batch& b = pipe_->next_batch();
  downgraded_ += downgraded_in(b);
  return to_model_batch(b);
}

void actor_pipeline_source::reslot(const data_slot& slot) { pipe_->reslot(order_slot_of(slot)); }

std::vector<msg::bad_sample_count> actor_pipeline_source::bad_sample_totals() const {
  return bad_sample_totals_of(pipe_->bad_data());
}

}  // namespace msomni::rank_worker
