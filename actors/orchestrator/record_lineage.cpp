// record_lineage (see record_lineage.hpp).
#include "record_lineage.hpp"

#include <utility>

namespace msomni::orchestrator {

std::vector<msg::step_record> record_lineage::resumed(uint64_t epoch, uint64_t step) {
  std::vector<msg::step_record> out;
  if (resumed_epoch_ == epoch) return out;
  resumed_epoch_ = epoch;
  for (auto& [s, h] : std::exchange(held_, {}))
    if (s <= step) out.push_back(std::move(h));
  return out;
}

released_records record_lineage::on_record(const msg::step_record& r) {
  released_records out;
  if (r.epoch < rollback_plan_epoch_) {
    if (held_.size() >= held_max) held_.erase(held_.begin());
    held_[r.step] = r;
    return out;
  }
  if (r.epoch == rollback_plan_epoch_ && r.step > 0) out.held = resumed(r.epoch, r.step - 1);
  out.record = r;
  return out;
}

std::vector<msg::step_record> record_lineage::on_rank_left(const msg::rank_left& r) {
  std::vector<msg::step_record> out;
  if (r.epoch == rollback_plan_epoch_) out = resumed(r.epoch, r.final_step);
  if (r.reason == "finished" && r.epoch < rollback_plan_epoch_) {
    for (auto& [s, h] : std::exchange(held_, {}))
      if (h.epoch == r.epoch && s <= r.final_step) out.push_back(std::move(h));
      else held_.emplace(s, std::move(h));
  }
  return out;
}

}  // namespace msomni::orchestrator
