// msomni-run resized in place (job_spec::resize_in_place; see job_runner_state.hpp):
// scale-down / scale-up requests to its control endpoint, then its status until it runs
// on the replicas asked for; a shrink answers job_released then. A failure falls back.
#include "job_runner_state.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>

namespace msomni::cli::runner_detail {

// Not in place: a shrink restarts the command on the replicas it keeps; a grow applies at
// its next start. `why` (empty when in-place resizing was not asked for) is said.
static void resize_the_old_way(runner_actor* self, bool shrink, const std::string& why) {
  auto& s = self->state;
  if (shrink) {
    if (!why.empty())
      say(s, "cannot shrink in place (" + why + "): restarts on " + std::to_string(s.keep_replicas) + " replicas");
    signal_child(s, SIGTERM, stopping::shrink);
  } else {
    say(s, "grown to " + std::to_string(s.replicas) + " replicas: applies at the next start" +
               (why.empty() ? std::string() : " (not in place: " + why + ")"));
  }
}

// msomni-run's status reply (JSON) says it runs on `replicas` ranks.
static bool runs_on(const std::string& status_json, uint32_t replicas) {
  const auto s = nlohmann::json::parse(status_json, nullptr, /*allow_exceptions=*/false);
  if (!s.is_object()) return false;
  const auto world = s.find("world");
  const auto phase = s.find("phase");
  return world != s.end() && world->is_number_unsigned() && world->get<uint64_t>() == replicas && phase != s.end() &&
         phase->is_string() && phase->get<std::string>() == "running";
}

// The in-place resize in progress failed: the old way after all.
static void abandon_resize(runner_actor* self, const std::string& why) {
  auto& s = self->state;
  const bool shrink = s.resize_is_shrink;
  s.resize_to = 0;
  resize_the_old_way(self, shrink, why);
}

void resize(runner_actor* self, uint32_t replicas, bool shrink, double within_s, uint64_t epoch) {
  auto& s = self->state;
  if (!s.spec.resize_in_place) return resize_the_old_way(self, shrink, "");
  std::string why;
  std::optional<control_endpoint> control;
  if (s.spec.run_dir.empty() || !s.find_control) why = "no run directory to find msomni-run's control endpoint in";
  else if (!s.child.running()) why = "the command is not running";
  else if (s.resize_to != 0) why = "another resize is in progress";
  else {
    try {
      control = s.find_control(s.spec.run_dir);
      if (!control) why = "no control endpoint in " + s.spec.run_dir + "/control.json answers";
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  if (!control) return resize_the_old_way(self, shrink, why);
  s.resize_to = replicas;
  s.resize_is_shrink = shrink;
  s.resize_epoch = epoch;
  s.resize_until = steady_after(std::max(within_s, 30.0));
  const msg::control_request req{control->token, shrink ? "scale-down" : "scale-up", replicas, within_s,
                                 "msomni job " + s.spec.id};
  self->request(control->orchestrator, std::chrono::seconds(30), req)
      .then(
          [self, control](const msg::control_reply& r) {
            if (!r.ok) return abandon_resize(self, r.text);
            self->send(self, resize_poll_atom::value, control->orchestrator, control->token);
          },
          [self](caf::error& e) { abandon_resize(self, "no answer from msomni-run: " + caf::to_string(e)); });
}

// msomni-run runs on the requested replicas: the job's GPUs follow.
static void resized(runner_actor* self) {
  auto& s = self->state;
  const uint32_t n = s.resize_to;
  s.resize_to = 0;
  if (s.resize_is_shrink) {
    keep_replicas_only(s, n);
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
  if (s.resize_to == 0 || !s.child.running() || s.over) return;
  if (std::chrono::steady_clock::now() > s.resize_until) return abandon_resize(self, "msomni-run did not resize in time");
  self->request(orchestrator, std::chrono::seconds(10), msg::control_request{token, "status", 0, 0, "msomni job"})
      .then(
          [self, orchestrator, token](const msg::control_reply& r) {
            auto& st = self->state;
            if (st.resize_to == 0) return;
            if (r.ok && runs_on(r.json, st.resize_to)) return resized(self);
            self->delayed_send(self, std::chrono::milliseconds(250), resize_poll_atom::value, orchestrator, token);
          },
          [self](caf::error& e) { abandon_resize(self, "msomni-run's status: " + caf::to_string(e)); });
}

}  // namespace msomni::cli::runner_detail
