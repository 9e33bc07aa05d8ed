// leader_follower (see leader_follower.hpp).
#include "leader_follower.hpp"

#include <iostream>
#include <utility>

namespace msomni::apps {

namespace {

// What an older control.json that names no follow limit gets.
constexpr auto default_limit = std::chrono::seconds(60);

}  // namespace

leader_follower::leader_follower(std::filesystem::path control_json, std::string joined, int64_t joined_pid,
                                 std::string node)
    : file_(std::move(control_json)), node_(std::move(node)) {
  follow_.joined({std::move(joined), joined_pid});
}

leader_follower::result leader_follower::step(transport::transport_hub& hub, transport::gateway& gw) {
  const auto now = clock_.now();
  const auto f = read_control_file(file_);
  const auto& lost = follow_.served();
  if (!follow_.following()) {
    const auto limit = f && f->follow_limit_s > 0 ? std::chrono::seconds(f->follow_limit_s) : default_limit;
    follow_.lost(lost, now, limit);
    std::cout << "msomni-agent: node " << node_ << ": the leader at " << lost.address
              << " is gone; the ranks train on while the next leader is found through " << file_.string()
              << " (up to " << std::chrono::duration_cast<std::chrono::seconds>(limit).count() << " s)" << std::endl;
  }
  if (run_ended_under_its_leader(file_.parent_path())) {
    std::cout << "msomni-agent: node " << node_ << ": the job ended under its leader" << std::endl;
    return {outcome::ended, {}};
  }
  if (follow_.past_limit(now)) {
    std::cerr << "msomni-agent: node " << node_ << ": no leader of the job answered within "
              << std::chrono::duration_cast<std::chrono::seconds>(follow_.limit()).count() << " s of losing the one at "
              << lost.address << "; stopping this node's ranks" << std::endl;
    return {outcome::gave_up, {}};
  }
  std::optional<leader_named> named;
  if (f) named = leader_named{f->address, f->pid};
  // The lost leader's node still connected (its orchestrator ended first): "control" would
  // name it, not the next leader. A next leader starts only once the last one's process is
  // gone, so that node goes too.
  if (!follow_.try_now(named, hub.node().is_up("control"), now)) return {};
  hub.node().connect(named->address);
  if (!hub.node().wait_up("control", leader_connect_wait)) return {};
  follow_.joined(*named);
  std::cout << "msomni-agent: node " << node_ << " joined the job's next leader at " << named->address << " (pid "
            << named->pid << ")" << std::endl;
  return {outcome::joined, gw.remote_actor<msg::orchestrator_actor>("control", "orchestrator")};
}

}  // namespace msomni::apps
