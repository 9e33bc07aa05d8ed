#include "scheduler_client.hpp"

#include "messages/catalog.hpp"

#include <fstream>

namespace msomni::cli {

namespace {
transport::ucx_node_options node_options(const std::string& node) {
  transport::ucx_node_options opt;
  opt.name = node;
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
    : ep_(ep), sys_(configure_process(cfg_, 1)), hub_(node_options(node)), gw_(sys_, hub_) {}

bool scheduler_client::join(std::chrono::milliseconds timeout) {
  hub_.node().connect(ep_.address);
  return hub_.node().wait_up("sched", timeout);
}

caf::actor scheduler_client::scheduler() { return gw_.remote_actor("sched", "scheduler-" + ep_.token); }

caf::actor scheduler_client::reconnect(const std::string& info_file, std::chrono::milliseconds timeout) {
  const auto ep = read_scheduler_info(info_file);
  if (!ep || ep->token == ep_.token) return {};  // still the instance that went away
  if (!hub_.node().is_up("sched")) {
    hub_.node().connect(ep->address);
    if (!hub_.node().wait_up("sched", timeout)) return {};
  }
  ep_ = *ep;
  return scheduler();
}

}  // namespace msomni::cli
