// elastic_core, adoption after a takeover: the ranks of a leader that died kept training at
// their epoch; the control process that took over adopts them as they run when a whole
// membership asks to be adopted, training, within the adoption window. Anything less (a
// membership caught at a barrier or stalled, a member missing) is not adopted: the ranks that
// asked are told to leave and the job starts anew from its newest checkpoint, as a takeover
// without adoption does. An elastic change in flight is thereby either complete in the
// adopted membership or dropped, never half applied.
#include "elastic_core.hpp"

#include "number_text.hpp"

#include <algorithm>
#include <cstdlib>

namespace msomni::orchestrator {

namespace {

std::string where(const msg::rank_rejoin& r) {
  return "epoch " + std::to_string(r.epoch) + ", rank " + std::to_string(r.rank) + " of " +
         std::to_string(r.members.size()) + ", step " + std::to_string(r.steps_done) +
         (r.training ? ", training" : ", waiting for a plan");
}

}  // namespace

std::vector<action> elastic_core::on_rank_rejoin(const msg::rank_rejoin& r, time_point now) {
  std::vector<action> out;
  if (const auto id = rank_id_of(r.name)) next_rank_id_ = std::max(next_rank_id_, *id + 1);
  // A member of this process's own membership whose connection dropped (elastic_reconnect.cpp).
  if (const auto it = members_.find(r.name);
      it != members_.end() && it->second.pid == r.pid && it->second.state == member_state::active)
    return readopt(r, now);
  if (s_.adopt_window <= nanos{0} || adoption_closed_ || placed_first_ || phase_ != phase::starting) {
    const std::string why = adopted_ ? "the job's ranks were adopted without it"
                            : s_.adopt_window <= nanos{0} ? "this control process adopts no ranks"
                                                          : "the adoption window had closed; the job started anew";
    out.push_back(journal_event{"rank_rejoin_refused", r.name + " (" + where(r) + "): " + why, r.name, r.node,
                                {{"pid", r.pid}}});
    out.push_back(answer_rejoin{r.name, false, why});
    return out;
  }
  rejoined_[r.name] = r;
  out.push_back(journal_event{"rank_rejoin", r.name + " on " + r.node + " pid " + std::to_string(r.pid) + " (" + where(r) +
                                                 ") asks to be adopted",
                              r.name, r.node, {{"pid", r.pid}, {"rejoin_epoch", static_cast<int64_t>(r.epoch)}}});
  // A whole membership, every member at the same epoch with the same ring, all training.
  const auto& ring = r.members;
  if (ring.empty() || !r.training) return out;
  for (const auto& n : ring) {
    const auto it = rejoined_.find(n);
    if (it == rejoined_.end() || it->second.epoch != r.epoch || it->second.members != ring || !it->second.training)
      return out;
  }
  const auto w = static_cast<int64_t>(ring.size());
  if (w < s_.min_replicas || w > s_.max_replicas || !grad_accum_for(w)) return out;  // the window closes on it
  auto more = adopt(r, now);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

std::vector<action> elastic_core::adopt(const msg::rank_rejoin& r, time_point now) {
  std::vector<action> out;
  uint64_t step = 0;
  for (const auto& n : r.members) {
    const auto& j = rejoined_.at(n);
    member_info m;
    m.name = n;
    m.node = j.node;
    m.address = j.address;
    m.pid = j.pid;
    m.state = member_state::active;
    m.since = now;
    m.member_since = r.epoch;
    members_[n] = m;
    step = std::max(step, j.steps_done);
  }
  ring_ = r.members;
  epoch_ = std::max(epoch_, r.epoch);  // the next plan comes after every epoch used so far
  last_step_ = std::max(last_step_, step);
  target_ = static_cast<int64_t>(ring_.size());
  phase_ = phase::running;
  placed_first_ = true;
  adoption_closed_ = true;
  adopted_ = true;
  out.push_back(journal_event{"ranks_adopted",
                              std::to_string(ring_.size()) + " ranks of the previous leader adopted at epoch " +
                                  std::to_string(r.epoch) + " (step " + std::to_string(step) +
                                  "): they trained on while the job had no leader, and no rank was restarted",
                              "", "",
                              // the job's replicas from now on, as a completed resize's: a control
                              // store keeps them for the next takeover
                              {{"replicas", static_cast<int64_t>(ring_.size())},
                               {"adopted", static_cast<int64_t>(ring_.size())},
                               {"adopted_epoch", static_cast<int64_t>(r.epoch)},
                               {"adopted_step", static_cast<int64_t>(step)}}});
  for (const auto& [n, j] : rejoined_) {
    const bool member = std::find(ring_.begin(), ring_.end(), n) != ring_.end();
    out.push_back(answer_rejoin{n, member, member ? "" : "not a member of the adopted epoch " + std::to_string(r.epoch)});
  }
  rejoined_.clear();
  return out;
}

std::vector<action> elastic_core::close_adoption(time_point now) {
  (void)now;
  std::vector<action> out;
  adoption_closed_ = true;
  const auto window = seconds_text(s_.adopt_window);
  if (rejoined_.empty()) {
    out.push_back(journal_event{"adoption_window_closed", "no rank of the previous leader rejoined within " + window +
                                                              " s; the job starts anew from its newest checkpoint"});
    return out;
  }
  std::string who;
  for (const auto& [n, j] : rejoined_) who += (who.empty() ? "" : ", ") + n + " (" + where(j) + ")";
  const std::string why = "no whole membership rejoined training within " + window + " s (" + who +
                          "); the job starts anew from its newest checkpoint";
  out.push_back(journal_event{"adoption_window_closed", why, "", "",
                              {{"rejoined", static_cast<int64_t>(rejoined_.size())}}});
  for (const auto& [n, j] : rejoined_) out.push_back(answer_rejoin{n, false, why});
  rejoined_.clear();
  return out;
}

}  // namespace msomni::orchestrator
