// The control endpoint of a running job as the CLI joins it; control.json itself is read by
// core/control_file.hpp, shared with the node agents and ranks that follow the job's leader.
#pragma once

#include "core/control_file.hpp"

#include "messages/actor_interfaces.hpp"

#include <string>

namespace msomni::cli {

using msomni::control_file;
using msomni::control_process_gone;
using msomni::ended_run_summary;
using msomni::read_control_file;

// msomni-run's orchestrator (its control endpoint, joined) and the run's token.
struct control_endpoint {
  msg::orchestrator_actor orchestrator;
  std::string token;
};

}  // namespace msomni::cli
