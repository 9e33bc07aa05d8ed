// msomni-sched's status as JSON: what `msomni sched-status --json` prints and what `msomni
// inspect --scheduler-info` shows, in one place.
#pragma once

#include "messages/cluster_job_messages.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace msomni::cli {

// "critical", "regular", "best-effort"; "?" for a number no class has.
const char* job_class_name(job_class c);

// The counts in the order the sched-status table shows them, then each job (with "figures":
// the numbers its hold or its placement compared), the newest decisions ("recent_decisions",
// each with its "figures"), then the ended jobs it keeps: "stopped" (each with the step it
// resumes from) and "ended" (the others).
nlohmann::ordered_json scheduler_status_json(const msg::scheduler_status& s);

// A decision's or hold's numbers as one object, name -> value.
nlohmann::ordered_json figures_json(const msg::reason_figures& figures);

// One decision or hold as sched-status --json lists it: at_s, kind, job, host, gpus, share,
// reason, figures.
nlohmann::ordered_json decision_json(const msg::job_command& c);

}  // namespace msomni::cli
