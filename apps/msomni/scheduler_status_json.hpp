// msomni-sched's status as JSON: what `msomni sched-status --json` prints and what `msomni
// inspect --scheduler-info` shows, in one place.
#pragma once

#include "messages/cluster_job_messages.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace msomni::cli {

// "critical", "regular", "best-effort" for a job_class byte; "?" otherwise.
const char* job_class_name(uint8_t c);

// The counts in the order the sched-status table shows them, then each job, then the ended
// jobs it keeps: "stopped" (each with the step it resumes from) and "ended" (the others).
nlohmann::ordered_json scheduler_status_json(const msg::scheduler_status& s);

}  // namespace msomni::cli
