// elastic_core, reconnects: a member whose connection dropped while its process may live on
// keeps its place for reconnect_window and is adopted again as it runs when it rejoins (its
// step records after what this process journaled come again); and this control process's
// own pauses, which are not its peers' silence.
#include "elastic_core.hpp"

#include "number_text.hpp"

#include <algorithm>

namespace msomni::orchestrator {

std::vector<action> elastic_core::on_rank_unreachable(const std::string& name, const std::string& why, time_point now) {
  const auto it = members_.find(name);
  if (it == members_.end()) return {};
  auto& m = it->second;
  // Only a member of a job that trains with nothing under way can be taken back as it runs;
  // during a change the others wait for it at a barrier, so waiting would only cost them.
  if (s_.reconnect_window <= nanos{0} || m.state != member_state::active || phase_ != phase::running)
    return on_rank_down(name, why, now);
  if (m.unreachable_since) return {};
  m.unreachable_since = now;
  m.unreachable_why = why;
  return {journal_event{"rank_unreachable",
                        name + " on " + m.node + ": " + why + "; its agent reported no exit, so it keeps its place for " +
                            seconds_text(s_.reconnect_window) + " s to reconnect",
                        name, m.node}};
}

std::vector<action> elastic_core::declare_unreconnected_down(time_point now) {
  std::vector<action> out;
  std::vector<std::string> late;
  for (const auto& [n, m] : members_)
    if (m.unreachable_since && m.state == member_state::active && now - *m.unreachable_since > s_.reconnect_window)
      late.push_back(n);
  for (const auto& n : late) {
    const auto why = members_.at(n).unreachable_why + "; it did not reconnect within " +
                     seconds_text(s_.reconnect_window) + " s";
    members_.at(n).unreachable_since.reset();
    auto more = on_rank_down(n, why, now);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

std::vector<action> elastic_core::readopt(const msg::rank_rejoin& r, time_point now) {
  std::vector<action> out;
  auto& m = members_.at(r.name);
  const bool at_epoch = r.epoch == epoch_ && r.members == ring_;
  if (phase_ != phase::running || !at_epoch || !r.training) {
    const std::string why = "it reconnected at epoch " + std::to_string(r.epoch) + " (" +
                            (r.training ? "training" : "waiting for a plan") + ") while the job is " +
                            to_string(phase_) + " at epoch " + std::to_string(epoch_) +
                            ", so it cannot go on as it runs";
    m.unreachable_since.reset();
    out = on_rank_down(r.name, why, now);
    out.push_back(answer_rejoin{r.name, false, why});
    return out;
  }
  const auto away = m.unreachable_since ? seconds_text(now - *m.unreachable_since) + " s after its connection dropped"
                                        : std::string("before its old connection was seen to drop");
  m.unreachable_since.reset();
  m.address = r.address;
  last_step_ = std::max(last_step_, r.steps_done);
  out.push_back(journal_event{"rank_reconnected",
                              r.name + " on " + r.node + " reconnected " + away + " (epoch " + std::to_string(r.epoch) +
                                  ", step " + std::to_string(r.steps_done) +
                                  "): adopted as it runs, no rollback; its step records after the last journaled "
                                  "step come again",
                              r.name, r.node, {{"pid", r.pid}, {"step", static_cast<int64_t>(r.steps_done)}}});
  out.push_back(answer_rejoin{r.name, true, "", true});
  return out;
}

std::vector<action> elastic_core::on_own_pause(nanos paused, time_point now) {
  if (paused <= nanos{0}) return {};
  const auto forward = [&](time_point t) { return std::min(t + paused, now); };
  for (auto& [node, heard] : agent_heard_) heard = forward(heard);
  for (auto& [n, m] : members_) {
    if (m.unreachable_since) m.unreachable_since = forward(*m.unreachable_since);
    if (m.state == member_state::starting) m.since = forward(m.since);
  }
  if (phase_ == phase::shrinking) deadline_ += paused;
  return {journal_event{"control_paused",
                        "this control process stood still for " + seconds_text(paused) +
                            " s (stopped, or starved of the CPU); its agents' and ranks' silence in that time is not "
                            "counted against them",
                        "", "", {{"paused_ms", std::chrono::duration_cast<std::chrono::milliseconds>(paused).count()}}}};
}

}  // namespace msomni::orchestrator
