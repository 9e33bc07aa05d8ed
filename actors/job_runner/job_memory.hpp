// What `msomni job` tells the scheduler about its run's device memory: msomni-run journals
// its memory watermark predictor's advice as "memory_advice" lines of RUN_DIR/events.jsonl
// (per rank: forecast_gb, the forecast peak over the horizon; margin_gb, the safety margin;
// device_gb, the device budget), and this tracker turns them into msg::job_memory_report:
// the largest forecast plus margin over the ranks of the newest attempt, and the device.
// Pure: lines in, reports out; no file, clock or CAF.
//
// Bounded and rate-limited: one forecast per rank (a rank that left keeps its last one until
// the next attempt, which errs on the side of more memory), and a report only when it differs
// from the last one sent. The predictor itself advises only on news (a reservation that
// moved by more than 5% of the device, or a change between fitting and not), and msomni-run
// journals the first 1000 such advice lines of a run: past them the scheduler keeps the last
// forecast it was told.
#pragma once

#include "messages/scheduling_messages.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace msomni::job_runner {

class memory_report_tracker {
 public:
  explicit memory_report_tracker(std::string job) : job_(std::move(job)) {}

  // One line of events.jsonl; true when it was memory advice the tracker took. A line of a
  // later attempt than the ones seen drops the earlier attempts' forecasts. Lines that are not
  // JSON objects, other events and advice without a usable forecast are passed over.
  bool take_line(const std::string& line);
  // The report to send now: when the job has a forecast and it (or the device) differs from
  // the last report sent; else nothing.
  std::optional<msg::job_memory_report> due();
  // The scheduler is a new one (restarted): the next due() reports the current view again.
  void resend() { sent_.reset(); }

  uint64_t forecast_peak_bytes() const;
  uint64_t device_bytes() const noexcept { return device_; }
  size_t ranks() const noexcept { return per_rank_.size(); }
  uint64_t reports_due() const noexcept { return reports_; }

 private:
  std::string job_;
  std::map<std::string, uint64_t> per_rank_;  // rank -> forecast peak + margin (bytes)
  uint64_t device_ = 0, step_ = 0, attempt_ = 0;
  std::optional<msg::job_memory_report> sent_;
  uint64_t reports_ = 0;
};

}  // namespace msomni::job_runner
