// A short-lived client of msomni-sched for the `msomni` subcommands (job, sched-status):
// reads the service's info file ("ADDRESS TOKEN"), starts an actor system with the message
// catalog and a UCX node, joins the service and hands out the scheduler's actor handle.
#pragma once

#include "control_file.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace msomni::cli {

struct scheduler_endpoint {
  std::string address, token;
};

// nullopt when the file cannot be read or does not hold "ADDRESS TOKEN".
std::optional<scheduler_endpoint> read_scheduler_info(const std::string& path);

class scheduler_client {
 public:
  // `node` names this process's UCX node; it must be unique among the service's peers.
  scheduler_client(const scheduler_endpoint& ep, const std::string& node);
  // True once the service answered within `timeout`.
  bool join(std::chrono::milliseconds timeout);
  msg::scheduler_actor scheduler();
  // After the service went away: when `info_file` names a new instance (another token: a
  // restarted msomni-sched writes a fresh one), joins it and returns its scheduler's handle;
  // an invalid handle while there is none yet or it does not answer within `timeout`.
  msg::scheduler_actor reconnect(const std::string& info_file, std::chrono::milliseconds timeout);
  // The control endpoint of the msomni-run whose run directory is `run_dir` (its
  // control.json), joined within `timeout`; nullopt when there is none or it does not answer.
  std::optional<control_endpoint> control_of(const std::string& run_dir, std::chrono::milliseconds timeout);
  caf::actor_system& system() { return sys_; }

 private:
  // True once `peer` is up, connecting to `address` first when it is not.
  // `secret`: what the peer's node asks connecting peers to prove (msomni-run's job token).
  bool reach(const std::string& peer, const std::string& address, std::chrono::milliseconds timeout,
             const std::string& secret = {});
  scheduler_endpoint ep_;
  caf::actor_system_config cfg_;
  caf::actor_system sys_;
  transport::transport_hub hub_;
  transport::gateway gw_;
};

}  // namespace msomni::cli
