// Checkpoint policy core (see checkpoint_policy.hpp).
#include "checkpoint_policy.hpp"

#include <algorithm>

namespace msomni::ckpt {

classified_entry classify_entry(const root_entry& e) {
  if (e.name.starts_with(".tmp-") || e.name.starts_with(".trash-"))
    return {entry_class::temporary, 0};
  if (e.name == latest_file && !e.is_dir) return {entry_class::latest_pointer, 0};
  if (e.is_dir)
    if (auto step = parse_checkpoint_dir_name(e.name)) return {entry_class::checkpoint, *step};
  return {entry_class::other, 0};
}

std::string staging_dir_name(uint64_t step, uint64_t epoch) {
  return ".tmp-" + checkpoint_dir_name(step) + "-e" + std::to_string(epoch);
}

cleanup_plan plan_cleanup(const std::vector<root_entry>& listing,
                          const std::vector<checkpoint_status>& checkpoints, uint64_t keep,
                          const std::set<std::string>& in_flight) {
  cleanup_plan plan;
  keep = std::max<uint64_t>(keep, 1);  // never retain nothing
  for (const auto& e : listing) {
    if (classify_entry(e).cls != entry_class::temporary || in_flight.count(e.name)) continue;
    plan.remove.push_back(e.name);
    plan.reasons.push_back(e.name + ": temporary left by an unfinished or crashed save");
  }
  std::vector<const checkpoint_status*> good, bad;
  for (const auto& c : checkpoints) (c.manifest_ok ? good : bad).push_back(&c);
  auto newest_first = [](const checkpoint_status* a, const checkpoint_status* b) {
    return a->step > b->step;
  };
  std::sort(good.begin(), good.end(), newest_first);
  std::set<uint64_t> kept;
  for (size_t i = 0; i < good.size() && i < keep; ++i) kept.insert(good[i]->step);
  // References may chain only one hop (an incremental points at the directories that hold
  // the files), but walking to a fixed point costs nothing and is robust to longer chains.
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto* c : good)
      if (kept.count(c->step))
        for (uint64_t r : c->references) grew |= kept.insert(r).second;
  }
  const uint64_t oldest_kept = kept.empty() ? 0 : *kept.begin();
  for (const auto* c : good)
    if (!kept.count(c->step)) {
      plan.remove.push_back(checkpoint_dir_name(c->step));
      plan.reasons.push_back(checkpoint_dir_name(c->step) + ": beyond keep = " +
                             std::to_string(keep));
    }
  for (const auto* c : bad)
    if (!kept.empty() && c->step < oldest_kept && !kept.count(c->step)) {
      plan.remove.push_back(checkpoint_dir_name(c->step));
      plan.reasons.push_back(checkpoint_dir_name(c->step) + ": unreadable (" + c->problem +
                             ") and older than every kept checkpoint");
    }
  return plan;
}

std::vector<uint64_t> load_order(const std::vector<root_entry>& listing) {
  std::vector<uint64_t> steps;
  for (const auto& e : listing) {
    const auto c = classify_entry(e);
    if (c.cls == entry_class::checkpoint) steps.push_back(c.step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

commit_tracker::commit_tracker(checkpoint_meta meta, std::set<uint32_t> expected_ranks)
    : meta_(meta), expected_(std::move(expected_ranks)) {
  if (expected_.empty()) {
    state_ = state::failed;
    failure_ = "no ranks expected";
  }
}

commit_tracker::state commit_tracker::on_report(const shard_report& r) {
  if (state_ == state::failed) return state_;
  if (!expected_.count(r.rank)) {
    state_ = state::failed;
    failure_ = "report from rank " + std::to_string(r.rank) + ", which this save did not ask";
    return state_;
  }
  for (const auto& g : got_)
    if (g.rank == r.rank) {
      if (g.ok == r.ok && g.record == r.record) return state_;  // a duplicate delivery
      state_ = state::failed;
      failure_ = "rank " + std::to_string(r.rank) + " reported two different results";
      return state_;
    }
  got_.push_back(r);
  if (!r.ok) {
    state_ = state::failed;
    failure_ = "rank " + std::to_string(r.rank) + " failed: " + r.error;
  } else if (got_.size() == expected_.size()) {
    state_ = state::ready;
  }
  return state_;
}

std::vector<shard_record> commit_tracker::records() const {
  std::vector<shard_record> out;
  for (const auto& g : got_)
    if (g.ok) out.push_back(g.record);
  std::sort(out.begin(), out.end(),
            [](const shard_record& a, const shard_record& b) { return a.rank < b.rank; });
  return out;
}

}  // namespace msomni::ckpt
