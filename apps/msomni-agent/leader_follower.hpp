// How msomni-agent follows the leader of a job with a control store once the leader it served
// is gone: it reads control.json (which every leader replaces whole) until the file names
// another leader (another address or pid), joins that leader's node and hands over its
// orchestrator. It stops following when the job ended under the leader it lost (its
// summary.json, written after control.json, says anything but "deposed"), or when no leader
// answered within control.json's follow_limit_s.
#pragma once

#include "core/clock.hpp"
#include "messages/actor_interfaces.hpp"
#include "core/control_file.hpp"
#include "core/leader_follow.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"

#include <caf/actor.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace msomni::apps {

class leader_follower {
 public:
  enum class outcome { waiting, joined, ended, gave_up };
  struct result {
    outcome what = outcome::waiting;
    msg::orchestrator_actor orchestrator;  // joined: the next leader's
  };

  // `control_json`: the job's control.json; `joined`: the address this agent joined first, and
  // `joined_pid` that leader's pid as control.json gave it (0: not known).
  leader_follower(std::filesystem::path control_json, std::string joined, int64_t joined_pid, std::string node);

  // Called while no leader is known (about every 100 ms): reads the file, and joins a leader
  // other than the one lost when it names one.
  result step(transport::transport_hub& hub, transport::gateway& gw);

 private:
  std::filesystem::path file_;
  std::string node_;
  real_clock clock_;
  leader_follow follow_{{true}};  // only a leader other than the one lost
};

}  // namespace msomni::apps
