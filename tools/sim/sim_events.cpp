// msomni-sim's events on the simulated clock: arrivals, completions, reservation-window
// ticks (predictor feed, forecasts, guest credit) and the invariant probe after each.
#include "sim_state.hpp"

#include <chrono>
#include <vector>

namespace msomni::sim {

using namespace msomni::sched;

// A regular job's run window that ended while a critical job waited makes it preemptible:
// the core acts on it as on a drain deadline, before the event at hand (the live shell
// arms a timer at next_window_end_s()).
void engine::catch_up() {
  double w = core_.next_window_end_s();
  if (w >= 0 && w <= now()) apply(core_.expire(now()));
}

void engine::arrive(size_t idx) {
  catch_up();
  sjob& j = jobs_[idx];
  j.last_t = now();
  ++result_.per_class[to_string(j.klass)].submitted;
  job_request r{sim_key(j), j.klass, j.t.gpus, j.gpr, j.min_replicas};
  apply(core_.submit(r, now()));
  check_invariants();
  if (!tick_armed_) {
    tick_armed_ = true;
    window_start_ = now();
    clk_.schedule_after(std::chrono::duration_cast<nanos>(
                            std::chrono::duration<double>(opt_.sched.reservation_window_s)),
                        [this] { tick(); });
  }
}

void engine::finish(sjob& j) {
  catch_up();
  j.finish_timer = 0;
  settle(j);
  for (size_t gi : std::vector<size_t>(guests_.begin(), guests_.end()))
    if (jobs_[gi].host == j.index) credit_guest(jobs_[gi], now());
  // A guest that overstayed pushed the host's end back; its rescheduled timer finishes it.
  if (j.remaining_s > 1e-6) return;
  drop_gpus(j, 0);
  active_.erase(j.index);
  complete(j);
  predictor_.forget(sim_key(j));
  apply(core_.finished(sim_key(j), now()));
  check_invariants();
}

void engine::complete(sjob& j) {
  if (j.done) throw std::logic_error("job " + sim_key(j) + " completed twice");
  if (j.finish_timer) clk_.cancel(j.finish_timer);
  j.finish_timer = 0;
  j.running = j.guest = j.draining = false;
  j.done = true;
  j.completion = now();
  guests_.erase(j.index);
  --unfinished_;
}

void engine::tick() {
  catch_up();
  double t = now();
  for (size_t i : active_) settle(jobs_[i]);
  for (size_t gi : std::vector<size_t>(guests_.begin(), guests_.end())) {
    sjob& g = jobs_[gi];
    credit_guest(g, t);
    if (g.remaining_s <= 1e-6) {
      complete(g);
      apply(core_.finished(sim_key(g), t));
    }
  }
  for (size_t i : active_) {
    sjob& j = jobs_[i];
    if (j.klass != job_class::critical || !j.running) continue;
    for (const auto& s : j.window_samples) predictor_.observe(sim_key(j), s);
    j.window_samples.clear();
    // Forecast from what is over, placed relative to now (inside the step in progress),
    // then realise the window.
    double since_last = j.cur_step.step_s - j.carry_s;
    auto f = predictor_.forecast(sim_key(j), opt_.sched.reservation_window_s, since_last);
    core_.set_forecast(sim_key(j), host_forecast_of(f));
    core_.report_guest_delay(sim_key(j), j.colocation_delay_s, t);
    roll_window(j);
  }
  // Headroom left unused: free GPUs while some job waits (value at the window's end held
  // over the window -- a per-window sample, not exact).
  if (core_.pending_count() > 0) account(window_start_, t, core_.gpus().free_count(), free_waiting_gpu_s_);
  apply(core_.window(t));
  check_invariants();
  split_idle(opt_.sched.reservation_window_s);
  if (t >= next_row_) timeline_row();
  window_start_ = t;
  if (unfinished_ > 0)
    clk_.schedule_after(std::chrono::duration_cast<nanos>(
                            std::chrono::duration<double>(opt_.sched.reservation_window_s)),
                        [this] { tick(); });
}

void engine::check_invariants() {
  if (opt_.policy != policy_kind::exclusive && core_.critical_starved_by_lower(now()))
    ++result_.critical_starvation_events;
}

}  // namespace msomni::sim
