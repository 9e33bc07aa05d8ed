// RUN_DIR/control.json, which msomni-run writes (mode 0600) so that local clients can reach
// its control endpoint: {"address":"HOST:PORT","token":"...","pid":N}.
#pragma once

#include <caf/actor.hpp>

#include <optional>
#include <string>

namespace msomni::cli {

struct control_file {
  std::string address, token;
};

// msomni-run's orchestrator (its control endpoint, joined) and the run's token.
struct control_endpoint {
  caf::actor orchestrator;
  std::string token;
};

// nullopt when RUN_DIR/control.json cannot be read or lacks the address or the token.
std::optional<control_file> read_control_file(const std::string& run_dir);

}  // namespace msomni::cli
