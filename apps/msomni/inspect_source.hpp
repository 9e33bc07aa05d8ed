// Where `msomni inspect` gets its snapshots: the job's control process (found through
// RUN_DIR/control.json, address + token, like `msomni status`), asked with the "inspect"
// control request, and msomni-sched (its info file), asked for its status. One UCX node
// joins both and stays joined while the console runs.
#pragma once

#include "control_file.hpp"
#include "inspect_model.hpp"
#include "scheduler_client.hpp"

#include "messages/cluster_job_messages.hpp"

#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace msomni::cli::inspect {

class inspect_source {
 public:
  // Either may be empty (not watched), not both.
  inspect_source(std::string run_dir, std::string scheduler_info);
  ~inspect_source();

  // Reads control.json and/or the scheduler's info file and joins those processes within
  // `timeout`; false with one line saying why (no job there, refused, nobody answers).
  bool join(std::chrono::milliseconds timeout, std::string& why);

  // The job's "inspect" reply and/or the scheduler's status into `s` (its time is left to
  // the caller); false with why: the job refused (e.g. metrics are off) or stopped answering.
  bool fetch(snapshot& s, std::chrono::milliseconds timeout, std::string& why);

 private:
  bool fetch_job(json& out, std::chrono::milliseconds timeout, std::string& why);
  bool fetch_scheduler(json& out, std::chrono::milliseconds timeout, std::string& why);

  const std::string run_dir_, scheduler_info_;
  std::optional<control_file> control_;
  std::optional<scheduler_endpoint> scheduler_;
  caf::actor_system_config cfg_;
  caf::actor_system sys_;
  std::atomic<bool> refused_{false};  // outlives the hub that sets it
  std::unique_ptr<transport::transport_hub> hub_;
  std::unique_ptr<transport::gateway> gw_;
};

// msomni-sched's status as `msomni sched-status --json` prints it (the same keys).
json scheduler_json(const msg::scheduler_status& s);

}  // namespace msomni::cli::inspect
