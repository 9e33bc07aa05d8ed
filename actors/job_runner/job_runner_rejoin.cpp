// job_runner_core (see job_runner_core.hpp): the scheduler goes away and comes back. The
// command keeps running while the shell looks for a restarted scheduler; the job then
// rejoins it or submits again.
#include "job_runner_core.hpp"

#include <algorithm>

namespace msomni::job_runner {

using namespace std::chrono_literals;

// Rejoining scheduler's predictor has no history; it keeps this many steps per job.
constexpr size_t predictor_history_lines = 200;
constexpr nanos reconnect_interval = 1s;

msg::job_submit job_runner_core::submission(time_point now) const {
  const double ago = std::chrono::duration<double>(now - submitted_at_).count();
  return {spec_.id, static_cast<job_class>(spec_.job_class), spec_.gpus, per_replica(spec_), spec_.min_replicas, ago, spec_.memory_bytes};
}

// Tells a scheduler found again about this job: a run that goes on where it is rejoins; a
// guest's run (its host's forecast is gone with the old instance) is stopped first; a run
// that is ending waits for its end (on_command_ended calls this again); no run: submit anew.
void job_runner_core::register_again(time_point now, actions& out) {
  if (running_ && why_ == stopping::no && !guest_) {
    // A shrink in place under way: the run holds only what it keeps (whether it gets there
    // in place or by a restart).
    std::vector<uint32_t> held = gpus_;
    uint32_t replicas = replicas_;
    if (resize_to_ != 0 && resize_is_shrink_) {
      held.resize(std::min<size_t>(held.size(), size_t{resize_to_} * per_replica(spec_)));
      replicas = resize_to_;
    }
    out.push_back(tell_scheduler{msg::job_rejoin{submission(now), held, replicas, epoch_}});
    registered_ = true;
    out.push_back(rewind_metrics{predictor_history_lines});
    out.push_back(say{"rejoins the scheduler on gpus " + join(held)});
    return;
  }
  if (running_) {
    if (why_ == stopping::no) {
      out.push_back(say{"stops its guest run: a restarted scheduler places guests anew"});
      stop(stop_signal::terminate, stopping::evicted, out);
    }
    return;
  }
  epoch_ = 0;  // the new instance counts this job's epochs from the start
  const msg::job_submit again = submission(now);
  out.push_back(tell_scheduler{again});
  registered_ = true;
  out.push_back(say{"submitted again to the restarted scheduler, in line since " + seconds_text(again.submitted_ago_s) +
                    " ago"});
}

// The command keeps running while the shell looks for a restarted scheduler (reconnect_s),
// or the job ends at once (reconnect_s 0).
actions job_runner_core::on_scheduler_lost(time_point now) {
  actions out;
  if (!scheduler_known_ || over_) return out;
  scheduler_known_ = false;
  registered_ = false;
  deferred_start_.reset();
  if (spec_.reconnect_s <= 0) {
    stop(stop_signal::terminate, stopping::killed, out);
    finish(1, "the scheduler went away", out);
    return out;
  }
  reconnect_until_ = now + std::chrono::duration_cast<nanos>(std::chrono::duration<double>(spec_.reconnect_s));
  out.push_back(say{std::string("the scheduler went away: ") + (running_ ? "the command keeps running; " : "") +
                    "waiting up to " + seconds_text(spec_.reconnect_s) + " for it to come back"});
  out.push_back(reconnect_later{nanos{0}});
  return out;
}

actions job_runner_core::on_reconnect_due(time_point now) {
  actions out;
  if (over_ || scheduler_known_) return out;
  if (now > reconnect_until_) {
    stop(stop_signal::terminate, stopping::killed, out);
    finish(1, "the scheduler went away and did not come back within " + seconds_text(spec_.reconnect_s), out);
    return out;
  }
  out.push_back(find_scheduler{});
  return out;
}

actions job_runner_core::on_scheduler_found(time_point now) {
  actions out;
  if (over_ || scheduler_known_) return out;
  scheduler_known_ = true;
  out.push_back(say{"found the scheduler again"});
  register_again(now, out);
  return out;
}

actions job_runner_core::on_scheduler_not_found(const std::optional<std::string>& error) {
  actions out;
  if (error) out.push_back(say{"cannot reach the scheduler yet: " + *error});  // e.g. an unusable address
  out.push_back(reconnect_later{reconnect_interval});
  return out;
}

}  // namespace msomni::job_runner
