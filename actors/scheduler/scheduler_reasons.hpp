// How the scheduler core words its decisions and holds: each reason is a text with the numbers
// it compared in it, and the same numbers by name (command::reason and command::figures), built
// together so that they cannot disagree. Pure functions of their arguments.
#pragma once

#include "scheduler_types.hpp"

#include <string>

namespace msomni::sched {

// A reason's text and the numbers in it.
struct explained {
  std::string text;
  ::msomni::sched::figures figures;
};

// Builds a reason: text and numbers side by side, each number shown in the text where it is
// kept (as "0.35", "40 s", "12.50 GB" ...).
class reason_text {
 public:
  explicit reason_text(std::string head = {}) : out_{std::move(head), {}} {}
  reason_text& add(const std::string& text) {
    out_.text += text;
    return *this;
  }
  // The number `value` under `name`, shown as number_text(value) followed by `unit`.
  reason_text& num(const std::string& name, double value, const std::string& unit = {});
  // The number `value` under `name`, shown as `shown`.
  reason_text& num_as(const std::string& name, double value, const std::string& shown);
  // Another reason's text and numbers, appended.
  reason_text& add(const explained& e);
  explained done() && { return std::move(out_); }
  const explained& so_far() const noexcept { return out_; }

 private:
  explained out_;
};

// `c` gets `e` as its reason and numbers.
inline void set_reason(command& c, explained e) {
  c.reason = std::move(e.text);
  c.figures = std::move(e.figures);
}

// A number as reasons show it: whole numbers as such, others to 3 significant digits, large
// ones without decimals ("8", "0.35", "0.051", "3600", "12.3").
std::string number_text(double v);

// How a host's lending was judged (reason none: it qualifies and lends `f.lends`), naming the
// host, with the numbers compared: for a hold, over_budget, low_confidence or below_threshold
// says why it lends nothing; for none, why it lends. A low confidence says what holds it down:
// step-time variance (the coefficient of variation caps it whatever the samples) or too few
// samples (how many it has and needs).
explained lending_explained(const std::string& host, const lending_figures& f, hold_reason r);

// What holds a host's lending back within its hold reason: for low_confidence, no forecast,
// step-time variance or too few samples (the log says a reason again when this changes, so
// that "no forecast" does not stand for a cause found later); other reasons: none.
enum class lending_cause : uint8_t { none, no_forecast, variance, few_samples };
lending_cause lending_cause_of(const lending_figures& f, hold_reason r);

// A hold's text and numbers (explain() and figures_of() give them apart).
explained hold_explained(const hold_note& h);

}  // namespace msomni::sched
