// elastic_core, the control verbs: scale-down, scale-up and stop, refused with the reason a
// user reads unless the job is steady and the new world size is allowed.
#include "elastic_core.hpp"

#include "number_text.hpp"

#include <algorithm>

namespace msomni::orchestrator {

control_outcome elastic_core::scale_to(int64_t replicas, nanos grace_period, time_point now) {
  control_outcome o;
  const int64_t w = world();
  if (phase_ != phase::running) {
    o.text = std::string("refused: the job is ") + to_string(phase_) + "; one elastic change at a time";
    return o;
  }
  // Members that already left (the last step is done and they report one by one) leave no
  // world to resize; a plan built from them would name ranks that are gone.
  if (current().size() != ring_.size()) {
    o.text = "refused: the job is finishing (" + std::to_string(ring_.size() - current().size()) + " of " +
             std::to_string(ring_.size()) + " replicas have left after step " + std::to_string(last_step_) + ")";
    return o;
  }
  if (replicas < s_.min_replicas || replicas > s_.max_replicas) {
    o.text = "refused: " + std::to_string(replicas) + " replicas is outside [elasticity.min_replicas " +
             std::to_string(s_.min_replicas) + ", elasticity.max_replicas " + std::to_string(s_.max_replicas) + "]";
    return o;
  }
  const auto accum = grad_accum_for(replicas);
  if (!accum) {
    o.text = "refused: global_batch " + std::to_string(s_.global_batch) + " cannot be split over " +
             std::to_string(replicas) + " replicas x micro_batch " + std::to_string(s_.micro_batch);
    return o;
  }
  if (replicas == w) {
    o.ok = true;
    o.text = "already at " + std::to_string(w) + " replicas";
    return o;
  }
  change_started_ = now;
  target_ = replicas;
  if (replicas < w) {
    auto members = current();
    members.resize(static_cast<size_t>(replicas));
    for (const auto& n : current())
      if (std::find(members.begin(), members.end(), n) == members.end()) members_.at(n).state = member_state::leaving;
    auto everyone = ring_;
    auto plan = make_plan(members, msg::state_source::carry_on, true, everyone,
                          "scale-down to " + std::to_string(replicas));
    ring_ = members;
    deadline_ = now + (grace_period.count() > 0 ? grace_period : s_.grace_period);
    plan_epoch_ = epoch_;
    phase_ = phase::shrinking;
    o.actions.push_back(journal_event{"scale_down", std::to_string(w) + " -> " + std::to_string(replicas) +
                                                        " replicas at the next barrier (epoch " + std::to_string(epoch_) +
                                                        ", grad_accum " + std::to_string(*accum) +
                                                        "); checkpoint first; grace period " +
                                                        seconds_text(deadline_ - now) + " s"});
    o.actions.push_back(std::move(plan));
    o.ok = true;
    o.text = "scaling down to " + std::to_string(replicas) + " replicas at the next barrier";
    return o;
  }
  const int64_t need = replicas - w;
  if (free_slots() < need) {
    o.text = "refused: " + std::to_string(need) + " more ranks need slots, the agents have " +
             std::to_string(free_slots()) + " free";
    return o;
  }
  o.actions = spawn(need, ring_.empty() ? "" : members_.at(ring_.front()).node, now);
  o.actions.push_back(journal_event{"scale_up", std::to_string(w) + " -> " + std::to_string(replicas) +
                                                    " replicas: new ranks load and verify the latest checkpoint, warm up, "
                                                    "and join at a barrier (grad_accum " + std::to_string(*accum) + ")"});
  phase_ = phase::growing;
  o.ok = true;
  o.text = "scaling up to " + std::to_string(replicas) + " replicas: " + std::to_string(need) + " ranks starting";
  return o;
}

control_outcome elastic_core::scale_down(int64_t replicas, nanos grace_period, time_point now) {
  if (replicas >= world())
    return {false, "refused: scale-down to " + std::to_string(replicas) + " replicas, the job has " + std::to_string(world()), {}};
  return scale_to(replicas, grace_period, now);
}

control_outcome elastic_core::scale_up(int64_t replicas, time_point now) {
  if (replicas <= world())
    return {false, "refused: scale-up to " + std::to_string(replicas) + " replicas, the job has " + std::to_string(world()), {}};
  return scale_to(replicas, nanos{0}, now);
}

control_outcome elastic_core::stop(time_point now) {
  control_outcome o;
  if (phase_ == phase::done || phase_ == phase::stopping || stop_queued_) {
    o.text = std::string("refused: the job is ") + (stop_queued_ ? "already to stop once its change has landed" : to_string(phase_));
    return o;
  }
  if (phase_ != phase::running) {
    // A change is under way (a start, a recovery and the replacements it waits for, a
    // resize): the stop waits for it to land, then goes out like any other (on_tick).
    stop_queued_ = true;
    o.ok = true;
    o.text = std::string("queued: the job is ") + to_string(phase_) +
             "; it stops with a final checkpoint at the first barrier once that change has landed";
    o.actions.push_back(journal_event{"stop_queued", o.text});
    return o;
  }
  return stop_now(now);
}

control_outcome elastic_core::stop_now(time_point now) {
  control_outcome o;
  stop_queued_ = false;
  change_started_ = now;
  auto everyone = ring_;
  auto plan = make_plan({}, msg::state_source::carry_on, true, everyone, "stop requested");
  phase_ = phase::stopping;
  o.actions.push_back(journal_event{"stop", "every rank saves a final checkpoint at the next barrier and leaves"});
  o.actions.push_back(std::move(plan));
  o.ok = true;
  o.text = "stopping at the next barrier with a final checkpoint";
  return o;
}

}  // namespace msomni::orchestrator
