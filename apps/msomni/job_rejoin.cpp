// A restarted scheduler (see job_runner_state.hpp): the runner keeps the command running,
// looks for the new instance through the info file, and rejoins or submits again.
#include "job_runner_state.hpp"

#include <signal.h>

namespace msomni::cli::runner_detail {

using namespace std::chrono_literals;

msg::job_submit submission(const runner_state& st) {
  const double ago = std::chrono::duration<double>(std::chrono::steady_clock::now() - st.submitted_at).count();
  return {st.spec.id, st.spec.job_class, st.spec.gpus, per_replica(st.spec), st.spec.min_replicas, ago};
}

// Tells a scheduler found again about this job: a run that goes on where it is rejoins; a
// guest's run (its host's forecast is gone with the old instance) is stopped first; a run
// that is ending waits for its end (child_ended calls this again); no run: submit anew.
void register_again(runner_actor* self) {
  auto& s = self->state;
  if (s.child.running() && s.why == stopping::no && !s.guest) {
    self->send(s.scheduler, msg::job_rejoin{submission(s), s.gpus, s.replicas, s.epoch});
    s.registered = true;
    s.metrics.rewind(200);
    say(s, "rejoins the scheduler on gpus " + join(s.gpus));
    return;
  }
  if (s.child.running()) {
    if (s.why == stopping::no) {
      say(s, "stops its guest run: a restarted scheduler places guests anew");
      signal_child(s, SIGTERM, stopping::evicted);
    }
    return;
  }
  s.epoch = 0;  // the new instance counts this job's epochs from the start
  const msg::job_submit again = submission(s);
  self->send(s.scheduler, again);
  s.registered = true;
  say(s, "submitted again to the restarted scheduler, in line since " + seconds(again.submitted_ago_s) + " ago");
}

// The scheduler went away: the command keeps running while the runner looks for a
// restarted one (reconnect_s), or the job ends at once (reconnect_s 0).
void scheduler_lost(runner_actor* self, const caf::down_msg& d) {
  auto& s = self->state;
  if (!s.scheduler || d.source != s.scheduler.address()) return;  // an earlier instance
  s.scheduler = caf::actor{};
  s.registered = false;
  s.deferred_start.reset();
  if (s.spec.reconnect_s <= 0) {
    signal_child(s, SIGTERM, stopping::killed);
    return finish(self, 1, "the scheduler went away");
  }
  s.reconnect_until = steady_after(s.spec.reconnect_s);
  say(s, std::string("the scheduler went away: ") + (s.child.running() ? "the command keeps running; " : "") +
             "waiting up to " + seconds(s.spec.reconnect_s) + " for it to come back");
  self->send(self, reconnect_atom::value);
}

// Once a second until reconnect_until: a restarted scheduler found through the info file
// is told about this job (register_again).
void look_for_scheduler(runner_actor* self) {
  auto& s = self->state;
  if (s.over || s.scheduler) return;
  if (std::chrono::steady_clock::now() > s.reconnect_until) {
    signal_child(s, SIGTERM, stopping::killed);
    return finish(self, 1, "the scheduler went away and did not come back within " + seconds(s.spec.reconnect_s));
  }
  caf::actor found;
  try {
    if (s.find_scheduler) found = s.find_scheduler();
  } catch (const std::exception& e) {  // e.g. an info file with an unusable address
    say(s, std::string("cannot reach the scheduler yet: ") + e.what());
  }
  if (!found) {
    self->delayed_send(self, 1s, reconnect_atom::value);
    return;
  }
  s.scheduler = found;
  self->monitor(found);
  say(s, "found the scheduler again");
  register_again(self);
}

}  // namespace msomni::cli::runner_detail
