#include "scheduler_client.hpp"

#include "messages/catalog.hpp"

#include <fstream>

namespace msomni::cli {

namespace {
transport::ucx_node_options node_options(const std::string& node, const std::string& scheduler_address) {
  transport::ucx_node_options opt;
  opt.busy_poll = transport::control_plane_busy_poll;
  opt.name = node;
  // UCX listens only on loopback and the interface that reaches the scheduler (loopback
  // alone while the scheduler's address is not known yet).
  try {
    opt.listen_host = transport::local_address_towards(scheduler_address.substr(0, scheduler_address.rfind(':')));
  } catch (const std::exception&) {
  }
  // A peer that dies is seen at once (its endpoint fails). A silent one counts as gone only
  // after 60 s: msomni-run's control node sends keep-alives once per heartbeat (seconds),
  // and a connection dropped early could not be made again until that side gives up on it.
  opt.keepalive_misses = static_cast<int>(std::chrono::seconds(60) / opt.keepalive_interval);
  return opt;
}
}  // namespace

std::optional<scheduler_endpoint> read_scheduler_info(const std::string& path) {
  std::ifstream in(path);
  scheduler_endpoint ep;
  if (path.empty() || !(in >> ep.address >> ep.token)) return std::nullopt;
  return ep;
}

scheduler_client::scheduler_client(const scheduler_endpoint& ep, const std::string& node)
    : ep_(ep),
      sys_(configure_process(cfg_, 1, idle_threads::wake)),
      hub_(node_options(node, ep.address)),
      gw_(sys_, hub_) {}

bool scheduler_client::reach(const std::string& peer, const std::string& address, std::chrono::milliseconds timeout,
                             const std::string& secret) {
  if (hub_.node().is_up(peer)) return true;
  hub_.node().connect(address, secret);
  return hub_.node().wait_up(peer, timeout);
}

bool scheduler_client::join(std::chrono::milliseconds timeout) { return reach("sched", ep_.address, timeout); }

msg::scheduler_actor scheduler_client::scheduler() {
  return gw_.remote_actor<msg::scheduler_actor>("sched", "scheduler-" + ep_.token);
}

std::optional<control_endpoint> scheduler_client::control_of(const std::string& run_dir,
                                                             std::chrono::milliseconds timeout) {
  const auto file = read_control_file(std::filesystem::path(run_dir) / "control.json");
  if (!file || !reach("control", file->address, timeout, file->token)) return std::nullopt;
  return control_endpoint{gw_.remote_actor<msg::orchestrator_actor>("control", "orchestrator"), file->token};
}

msg::scheduler_actor scheduler_client::reconnect(const std::string& info_file, std::chrono::milliseconds timeout) {
  const auto ep = read_scheduler_info(info_file);
  if (!ep || ep->token == ep_.token) return {};  // still the instance that went away
  if (!reach("sched", ep->address, timeout)) return {};
  ep_ = *ep;
  return scheduler();
}

}  // namespace msomni::cli
