// The rank's memory after each step (to the orchestrator's memory journal and predictor) and
// what a step did under a memory fit request, with the fit inbox's counts in the rank's
// metrics (see managed_rank_state.hpp).
#include "managed_rank_state.hpp"

#include "memory_features.hpp"

#include <iostream>

namespace msomni::apps::rank_shell {

using namespace std::chrono_literals;

// Every rank, after every step, before rank 0's step record goes out: its exact memory with
// the step's batch and the upcoming ones the data pipeline holds (memory.horizon_steps steps).
uint64_t managed_rank::send_memory_sample() {
  const auto& t = *tr_.trainer;
  const auto horizon = static_cast<size_t>(cfg_.memory.horizon_steps);
  const auto accum = t.grad_accum();
  auto upcoming = rank_worker::steps_of(tr_.data->upcoming_features(horizon * static_cast<size_t>(std::max<int64_t>(1, accum))),
                                        accum, horizon);
  const auto sample = probe_->step_ended(t.last_step_batch(), std::move(upcoming));
  if (metrics_) metrics_->on_memory(sample);
  return sample.peak_bytes;
}

// What the step did under its memory fit request, to the orchestrator (which journals it so
// that a resume replays it), and the inbox's counts to the rank's metrics.
void managed_rank::report_fit(const rank_worker::rank_trainer& t, uint64_t peak_bytes) {
  if (const auto& f = t.last_fit(); f && fit_) {
    msg::memory_fit_done d;
    d.fit = *fit_;
    d.epoch = identity_.epoch;
    d.micro_batches_split = f->micro_batches_split;
    d.parts = f->parts;
    d.keyframe_cuts = f->keyframe_cuts;
    d.fits = f->fits;
    d.peak_bytes = peak_bytes;
    d.detail = f->detail.empty() ? "as is" : f->detail;
    std::cout << "MEMORY_FIT step " << fit_->step << (fit_->replay ? " (replayed)" : "") << ": forecast "
              << fit_->forecast_bytes << " B over budget " << fit_->budget_bytes << " B: " << d.detail << "; peak "
              << peak_bytes << " B" << std::endl;
    link_.send(std::move(d));
  }
  fit_.reset();
  const auto now = fits_.totals();
  if (now.stale > fit_counts_.stale)  // loud: a forecast that came too late protected nothing
    std::cout << "MEMORY_FIT " << (now.stale - fit_counts_.stale)
              << " request(s) came after their step had started (stale; " << now.stale << " in all)" << std::endl;
  auto* r = metrics_registry().get();
  auto bump = [r](const char* result, uint64_t value, uint64_t& seen) {
    if (r && value > seen)
      r->counter("msomni_rank_fit_requests_total", {{"result", result}}).Increment(static_cast<double>(value - seen));
    seen = value;
  };
  bump("taken", now.taken, fit_counts_.taken);
  bump("dropped", now.dropped, fit_counts_.dropped);
  bump("stale", now.stale, fit_counts_.stale);
  bump("superseded", now.superseded, fit_counts_.superseded);
}

}  // namespace msomni::apps::rank_shell
