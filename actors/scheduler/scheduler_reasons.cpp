// scheduler_reasons (see scheduler_reasons.hpp): the words and numbers of the core's reasons.
#include "scheduler_reasons.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace msomni::sched {

std::string number_text(double v) {
  char buf[48];
  if (!std::isfinite(v)) return v != v ? "nan" : v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (std::fabs(v) >= 100) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

reason_text& reason_text::num(const std::string& name, double value, const std::string& unit) {
  return num_as(name, value, number_text(value) + unit);
}

reason_text& reason_text::num_as(const std::string& name, double value, const std::string& shown) {
  out_.text += shown;
  out_.figures.push_back({name, value});
  return *this;
}

reason_text& reason_text::add(const explained& e) {
  out_.text += e.text;
  out_.figures.insert(out_.figures.end(), e.figures.begin(), e.figures.end());
  return *this;
}

namespace {

std::string percent_text(double share) { return number_text(share * 100) + "%"; }

// "guests cost it 12 s of its 36 s slowdown budget (1% of its 3600 s run)"
void budget_part(reason_text& r, const lending_figures& f) {
  r.add("guests cost it ")
      .num("guest_delay_s", f.guest_delay_s, " s")
      .add(" of its ")
      .num("slowdown_budget_s", f.budget_s, " s")
      .add(" slowdown budget (")
      .num_as("slowdown_budget", f.slowdown_budget, percent_text(f.slowdown_budget))
      .add(" of its ")
      .num("run_s", f.run_s, " s")
      .add(" run)");
}

// "idle share 0.5 (next window 0.5, over its rhythm 0.45)"
void idle_part(reason_text& r, const lending_figures& f) {
  r.add("idle share ")
      .num("idle_share", f.idle_share)
      .add(" (next window ")
      .num("window_idle_share", f.window_idle)
      .add(", over its rhythm ")
      .num("rhythm_idle_share", f.rhythm_idle)
      .add(")");
}

// "200 samples, 30 for full confidence": how many it has, and how many give full confidence.
void sample_counts(reason_text& r, const lending_figures& f) {
  r.num("samples", static_cast<double>(f.samples))
      .add(" samples, ")
      .num("warmup_samples", static_cast<double>(f.warmup_samples))
      .add(" for full confidence");
}

// "(step-time cv 0.02; 200 samples, 30 for full confidence)": what the confidence came from,
// when known.
void samples_part(reason_text& r, const lending_figures& f) {
  if (f.warmup_samples == 0) return;  // a forecast given without it
  r.add(" (step-time cv ").num("step_time_cv", f.step_cv).add("; ");
  sample_counts(r, f);
  r.add(")");
}

// Why the confidence is under min_confidence: variance caps it, or the samples are too few.
void low_confidence_cause(reason_text& r, const lending_figures& f) {
  const double stability = std::max(0.0, 1.0 - f.step_cv);
  const lending_cause cause = lending_cause_of(f, hold_reason::low_confidence);
  if (cause == lending_cause::none) return;  // what it came from is not known here
  if (cause == lending_cause::variance) {
    r.add(": its step times vary too much (step-time cv ")
        .num("step_time_cv", f.step_cv)
        .add(" caps the confidence at ")
        .num("confidence_cap", stability)
        .add(" whatever the samples; ");
    sample_counts(r, f);
    r.add(")");
    return;
  }
  // stability >= min_confidence > confidence: the warm-up share holds it down.
  const double needed = std::ceil(f.min_confidence * static_cast<double>(f.warmup_samples) / stability - 1e-9);
  r.add(": too few step samples yet (")
      .num("samples", static_cast<double>(f.samples))
      .add(" of the ")
      .num("samples_needed", needed)
      .add(" it needs at its step-time cv ")
      .num("step_time_cv", f.step_cv)
      .add("; ")
      .num("warmup_samples", static_cast<double>(f.warmup_samples))
      .add(" for full confidence)");
}

}  // namespace

lending_cause lending_cause_of(const lending_figures& f, hold_reason r) {
  if (r != hold_reason::low_confidence) return lending_cause::none;
  if (!f.forecast) return lending_cause::no_forecast;
  if (f.warmup_samples == 0) return lending_cause::none;  // not known
  return std::max(0.0, 1.0 - f.step_cv) < f.min_confidence ? lending_cause::variance : lending_cause::few_samples;
}

explained lending_explained(const std::string& host, const lending_figures& f, hold_reason r) {
  reason_text out;
  switch (r) {
    case hold_reason::over_budget:
      out.add(host + " lost ")
          .num("guest_delay_s", f.guest_delay_s, " s")
          .add(" of its run to guests, past its ")
          .num_as("slowdown_budget", f.slowdown_budget, percent_text(f.slowdown_budget))
          .add(" slowdown budget (a budget of ")
          .num("slowdown_budget_s", f.budget_s, " s")
          .add(" of its ")
          .num("run_s", f.run_s, " s")
          .add(" run)");
      break;
    case hold_reason::low_confidence:
      if (!f.forecast) {
        out.add(host + " has no forecast: it has reported ")
            .num("samples", 0)
            .add(" steps (msomni job reports them only with --run-dir); lending needs min_confidence ")
            .num("min_confidence", f.min_confidence);
        break;
      }
      out.add(host + "'s forecast confidence ")
          .num("confidence", f.confidence)
          .add(" is under min_confidence ")
          .num("min_confidence", f.min_confidence);
      low_confidence_cause(out, f);
      break;
    case hold_reason::below_threshold:
      out.add(host + "'s predicted ");
      idle_part(out, f);
      out.add(" is under idle_threshold ").num("idle_threshold", f.idle_threshold);
      break;
    default:  // it qualifies: every comparison it passed
      idle_part(out, f);
      out.add(" passes idle_threshold ")
          .num("idle_threshold", f.idle_threshold)
          .add("; confidence ")
          .num("confidence", f.confidence)
          .add(" >= min_confidence ")
          .num("min_confidence", f.min_confidence);
      samples_part(out, f);
      if (f.delay_reported) {
        out.add("; ");
        budget_part(out, f);
      }
      out.add("; lends ").num("lent_share", f.lends);
      break;
  }
  return std::move(out).done();
}

explained hold_explained(const hold_note& h) {
  reason_text r(std::string(to_string(h.reason)) + ": ");
  const auto free = [&](reason_text& t) -> reason_text& { return t.num("gpus_free", h.gpus_free); };
  const auto wanted = [&](reason_text& t) -> reason_text& { return t.num("gpus_wanted", h.gpus_wanted); };
  switch (h.reason) {
    case hold_reason::none: return {"none", {}};
    case hold_reason::cluster_full:
      wanted(r.add("needs ")).add(" GPUs, ");
      free(r).add(" free and none it may take");
      break;
    case hold_reason::queue_order:
      r.add("behind " + h.by + ", which waits first (");
      free(r).add(" GPUs free)");
      break;
    case hold_reason::critical_waits:
      r.add("the GPUs are owed to waiting critical job " + h.by + "; ");
      free(r).add(" free are fewer than the ");
      wanted(r).add(" it needs to borrow them");
      break;
    case hold_reason::critical_reserve:
      free(r).add(" free GPUs are kept in the critical reserve (").num("reserve_gpus", h.reserve).add(
          " GPUs for critical bursts); it needs ");
      wanted(r).add(" beside it");
      break;
    case hold_reason::run_window:
      wanted(r.add("needs ")).add(" GPUs, ");
      free(r).add(" free; the rest are held by regular jobs inside their run window (" + h.by +
                  " first, its window ends in ")
          .num("window_left_s", h.window_left_s, " s")
          .add(")");
      break;
    case hold_reason::draining:
      wanted(r.add("needs ")).add(" GPUs, ");
      free(r).add(" free; waits for those its notices asked back");
      break;
    case hold_reason::below_threshold:
    case hold_reason::low_confidence:
    case hold_reason::over_budget:
      r.add(lending_explained(h.by, h.lending, h.reason)).add(": it lends nothing to guests");
      break;
    case hold_reason::queue_bound:
      r.add("the queue holds ")
          .num("queued_jobs", h.gpus_wanted)
          .add(" jobs, its queue_capacity ")
          .num("queue_capacity", static_cast<double>(h.queue_capacity))
          .add(": submissions are refused");
      break;
    case hold_reason::memory:
      r.add(h.by + "'s memory forecast leaves ")
          .num_as("headroom_bytes", static_cast<double>(h.headroom_bytes), gb_text(static_cast<double>(h.headroom_bytes)))
          .add(" of its ")
          .num_as("device_bytes", static_cast<double>(h.device_bytes), gb_text(static_cast<double>(h.device_bytes)))
          .add(" device; it needs ")
          .num_as("need_bytes", static_cast<double>(h.need_bytes), gb_text(static_cast<double>(h.need_bytes)))
          .add(" as a guest");
      break;
  }
  return std::move(r).done();
}

std::string explain(const hold_note& h) { return hold_explained(h).text; }

figures figures_of(const hold_note& h) { return hold_explained(h).figures; }

std::string gb_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

}  // namespace msomni::sched
