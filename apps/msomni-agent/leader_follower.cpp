// leader_follower (see leader_follower.hpp).
#include "leader_follower.hpp"

#include <iostream>
#include <utility>

namespace msomni::apps {

namespace {

// How long a joined leader's node has to answer, and how soon the same leader is tried again.
constexpr auto connect_wait = std::chrono::seconds(2);
constexpr auto retry_interval = std::chrono::seconds(5);
// What an older control.json that names no follow limit gets.
constexpr auto default_limit = std::chrono::seconds(60);

}  // namespace

leader_follower::leader_follower(std::filesystem::path control_json, std::string joined, int64_t joined_pid,
                                 std::string node)
    : file_(std::move(control_json)), node_(std::move(node)), leader_address_(std::move(joined)), leader_pid_(joined_pid) {}

leader_follower::result leader_follower::step(transport::transport_hub& hub, transport::gateway& gw) {
  const auto now = clock::now();
  const auto f = read_control_file(file_);
  if (!lost_at_) {
    lost_at_ = now;
    limit_ = f && f->follow_limit_s > 0 ? std::chrono::seconds(f->follow_limit_s) : default_limit;
    tried_.clear();
    std::cout << "msomni-agent: node " << node_ << ": the leader at " << leader_address_
              << " is gone; the ranks train on while the next leader is found through " << file_.string()
              << " (up to " << limit_.count() << " s)" << std::endl;
  }
  if (run_ended_under_its_leader(file_.parent_path())) {
    std::cout << "msomni-agent: node " << node_ << ": the job ended under its leader" << std::endl;
    return {outcome::ended, {}};
  }
  if (now - *lost_at_ > limit_) {
    std::cerr << "msomni-agent: node " << node_ << ": no leader of the job answered within " << limit_.count()
              << " s of losing the one at " << leader_address_ << "; stopping this node's ranks" << std::endl;
    return {outcome::gave_up, {}};
  }
  const bool another = f && (f->address != leader_address_ || (f->pid != 0 && f->pid != leader_pid_));
  if (!another) return {};
  // The lost leader's node still connected (its orchestrator ended first): "control" would
  // name it, not the next leader. A next leader starts only once the last one's process is
  // gone, so that node goes too.
  if (hub.node().is_up("control")) return {};
  const auto key = f->address + "/" + std::to_string(f->pid);
  if (key == tried_ && now - tried_at_ < retry_interval) return {};
  tried_ = key;
  tried_at_ = now;
  hub.node().connect(f->address);
  if (!hub.node().wait_up("control", connect_wait)) return {};
  leader_address_ = f->address;
  leader_pid_ = f->pid;
  lost_at_.reset();
  std::cout << "msomni-agent: node " << node_ << " joined the job's next leader at " << f->address << " (pid " << f->pid
            << ")" << std::endl;
  return {outcome::joined, gw.remote_actor("control", "orchestrator")};
}

}  // namespace msomni::apps
