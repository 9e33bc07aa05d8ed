// msomni-run resized in place (job_spec::resize_in_place; see job_runner_state.hpp):
// scale-down / scale-up requests to its control endpoint, then its status until it runs
// on the replicas asked for; a shrink answers job_released then. A failure falls back.
#include "job_runner_state.hpp"

#include <signal.h>

namespace msomni::cli::runner_detail {

// The world size in msomni-run's status JSON ("world":N), or -1.
static int64_t world_of(const std::string& status_json) {
  const auto at = status_json.find("\"world\":");
  if (at == std::string::npos) return -1;
  try {
    return std::stoll(status_json.substr(at + 8));
  } catch (...) {
    return -1;
  }
}

// The in-place resize could not be done: a shrink falls back to a restart on the replicas
// it keeps; a grow applies at the next start.
static void resize_failed(runner_actor* self, const std::string& why) {
  auto& s = self->state;
  const bool shrink = s.resize_is_shrink;
  s.resize_to = 0;
  if (shrink) {
    say(s, "cannot shrink in place (" + why + "): restarts on " + std::to_string(s.keep_replicas) + " replicas");
    signal_child(s, SIGTERM, stopping::shrink);
  } else {
    say(s, "cannot grow in place (" + why + "): applies at the next start");
  }
}

// Asks msomni-run (resize_in_place) to run on `replicas` replicas from its next barrier; the
// answer and then its status are followed by resize_poll_atom. False when there is no
// control endpoint to ask (the caller restarts the command instead); `why` says why not.
bool resize_in_place(runner_actor* self, uint32_t replicas, bool shrink, double within_s,
                     uint64_t epoch, std::string& why) {
  auto& s = self->state;
  if (!s.spec.resize_in_place || s.spec.run_dir.empty() || !s.find_control) {
    why = "not asked to resize in place";
    return false;
  }
  if (s.child <= 0 || s.resize_to != 0) {
    why = s.child <= 0 ? "the command is not running" : "another resize is in progress";
    return false;
  }
  std::optional<job_control> control;
  try {
    control = s.find_control(s.spec.run_dir);
    if (!control) why = "no control endpoint in " + s.spec.run_dir + "/control.json answers";
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!control) return false;
  s.resize_to = replicas;
  s.resize_is_shrink = shrink;
  s.resize_epoch = epoch;
  s.resize_until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(std::max(within_s, 30.0)));
  const msg::control_request req{control->token, shrink ? "scale-down" : "scale-up", replicas, within_s,
                                 "msomni job " + s.spec.id};
  self->request(control->orchestrator, std::chrono::seconds(30), req)
      .then(
          [self, control](const msg::control_reply& r) {
            if (!r.ok) return resize_failed(self, r.text);
            self->send(self, resize_poll_atom::value, control->orchestrator, control->token);
          },
          [self](caf::error& e) { resize_failed(self, "no answer from msomni-run: " + caf::to_string(e)); });
  return true;
}

// msomni-run runs on the requested replicas: the job's GPUs follow.
static void resized(runner_actor* self) {
  auto& s = self->state;
  const uint32_t n = s.resize_to;
  s.resize_to = 0;
  if (s.resize_is_shrink) {
    s.gpus.resize(std::min<size_t>(s.gpus.size(), size_t{n} * per_replica(s.spec)));
    s.replicas = n;
    if (s.registered)
      self->send(s.scheduler, msg::job_released{s.spec.id, s.resize_epoch, checkpoint_step(s.spec.run_dir)});
    say(s, "shrunk in place to " + std::to_string(n) + " replicas (gpus " + join(s.gpus) + ") and released the rest");
  } else {
    say(s, "grown in place to " + std::to_string(n) + " replicas (gpus " + join(s.gpus) + ")");
  }
}

// Follows msomni-run's status until it runs on resize_to replicas (or the time is up).
void poll_resize(runner_actor* self, caf::actor orchestrator, std::string token) {
  auto& s = self->state;
  if (s.resize_to == 0 || s.child <= 0 || s.over) return;
  if (std::chrono::steady_clock::now() > s.resize_until) return resize_failed(self, "msomni-run did not resize in time");
  self->request(orchestrator, std::chrono::seconds(10), msg::control_request{token, "status", 0, 0, "msomni job"})
      .then(
          [self, orchestrator, token](const msg::control_reply& r) {
            auto& st = self->state;
            if (st.resize_to == 0) return;
            if (r.ok && world_of(r.json) == static_cast<int64_t>(st.resize_to) &&
                r.json.find("\"phase\":\"running\"") != std::string::npos)
              return resized(self);
            self->delayed_send(self, std::chrono::milliseconds(250), resize_poll_atom::value, orchestrator, token);
          },
          [self](caf::error& e) { resize_failed(self, "msomni-run's status: " + caf::to_string(e)); });
}

}  // namespace msomni::cli::runner_detail
