// job_runner_core (see job_runner_core.hpp): msomni-run resized in place (resize_in_place):
// a scale-down / scale-up request to its control endpoint, then its status until it runs on
// the replicas asked for; a shrink answers job_released then. A failure falls back: a shrink
// restarts the command on the replicas it keeps, a grow applies at its next start.
#include "job_runner_core.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace msomni::job_runner {

using namespace std::chrono_literals;

constexpr double resize_time_min_s = 30;  // however short the drain period
constexpr nanos resize_status_interval = 250ms;

bool runs_on(const std::string& status_json, uint32_t replicas) {
  const auto s = nlohmann::json::parse(status_json, nullptr, /*allow_exceptions=*/false);
  if (!s.is_object()) return false;
  const auto world = s.find("world");
  const auto phase = s.find("phase");
  return world != s.end() && world->is_number_unsigned() && world->get<uint64_t>() == replicas && phase != s.end() &&
         phase->is_string() && phase->get<std::string>() == "running";
}

// `why` (empty when in-place resizing was not asked for) is said.
void job_runner_core::resize_the_old_way(bool shrink, const std::string& why, actions& out) {
  if (shrink) {
    if (why_ != stopping::no) {  // the command is being stopped already: that stop stands
      resize_to_ = 0;
      return;
    }
    if (!why.empty())
      out.push_back(say{"cannot shrink in place (" + why + "): restarts on " + std::to_string(keep_replicas_) + " replicas"});
    resize_to_ = 0;  // the command restarts: a resize in place still in progress no longer applies
    stop(stop_signal::terminate, stopping::shrink, out);
  } else {
    out.push_back(say{"grown to " + std::to_string(replicas_) + " replicas: applies at the next start" +
                      (why.empty() ? std::string() : " (not in place: " + why + ")")});
  }
}

void job_runner_core::resize(uint32_t replicas, bool shrink, double within_s, uint64_t epoch, time_point now,
                             actions& out) {
  if (!spec_.resize_in_place) return resize_the_old_way(shrink, "", out);
  std::string why;
  if (spec_.run_dir.empty()) why = "no run directory to find msomni-run's control endpoint in";
  else if (!running_) why = "the command is not running";
  else if (resize_to_ != 0) why = "another resize is in progress";
  if (!why.empty()) return resize_the_old_way(shrink, why, out);
  resize_to_ = replicas;
  resize_is_shrink_ = shrink;
  resize_epoch_ = epoch;
  resize_until_ = now + std::chrono::duration_cast<nanos>(std::chrono::duration<double>(std::max(within_s, resize_time_min_s)));
  out.push_back(ask_resize{shrink, replicas, within_s});
}

// The in-place resize in progress failed: the old way after all. A refusal that comes when
// none is in progress (its command ended meanwhile, e.g. killed) changes nothing.
actions job_runner_core::on_resize_refused(const std::string& why) {
  actions out;
  if (resize_to_ == 0) return out;
  const bool shrink = resize_is_shrink_;
  resize_to_ = 0;
  resize_the_old_way(shrink, why, out);
  return out;
}

actions job_runner_core::on_resize_accepted() { return {poll_resize_status{nanos{0}}}; }

// Follows msomni-run's status until it runs on resize_to_ replicas (or the time is up).
actions job_runner_core::on_resize_poll_due(time_point now) {
  if (resize_to_ == 0 || !running_ || over_) return {};
  if (now > resize_until_) return on_resize_refused("msomni-run did not resize in time");
  return {ask_status{}};
}

actions job_runner_core::on_resize_status(bool ok, const std::string& status_json, uint64_t checkpoint_step) {
  actions out;
  if (resize_to_ == 0) return out;
  if (!ok || !runs_on(status_json, resize_to_)) {
    out.push_back(poll_resize_status{resize_status_interval});
    return out;
  }
  // msomni-run runs on the requested replicas: the job's GPUs follow.
  const uint32_t n = resize_to_;
  resize_to_ = 0;
  if (resize_is_shrink_) {
    keep_replicas_only(n);
    if (registered_) out.push_back(tell_scheduler{msg::job_released{spec_.id, resize_epoch_, checkpoint_step}});
    out.push_back(say{"shrunk in place to " + std::to_string(n) + " replicas (gpus " + join(gpus_) + ") and released the rest"});
  } else {
    out.push_back(say{"grown in place to " + std::to_string(n) + " replicas (gpus " + join(gpus_) + ")"});
  }
  return out;
}

}  // namespace msomni::job_runner
