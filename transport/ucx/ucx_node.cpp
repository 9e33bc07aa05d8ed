// ucx_node's public interface: construction and destruction around the progress thread,
// and the bounded command queue through which other threads connect and send.
#include "ucx/ucx_node_impl.hpp"

namespace msomni::transport {

using namespace detail;

ucx_node::ucx_node(ucx_node_options options, ucx_node_handlers handlers) : impl_(std::make_unique<impl>()) {
  impl_->opt = std::move(options);
  impl_->h = std::move(handlers);
  impl_->liveness = {impl_->opt.keepalive_interval, impl_->opt.keepalive_misses, impl_->opt.hello_timeout};
  if (impl_->opt.name.empty() || impl_->opt.name.size() > max_node_name)
    throw std::invalid_argument("ucx_node: node name must be 1.." + std::to_string(max_node_name) + " bytes");
  impl_->start();
}

ucx_node::~ucx_node() {
  impl_->stopping = true;
  impl_->wake();
  if (impl_->thread.joinable()) impl_->thread.join();
  if (impl_->wake_fd >= 0) ::close(impl_->wake_fd);
  if (impl_->epoll_fd >= 0) ::close(impl_->epoll_fd);
}

const std::string& ucx_node::name() const { return impl_->opt.name; }

std::string ucx_node::address() const {
  return impl_->opt.listen_host + ":" + std::to_string(impl_->port);
}

namespace {
bool enqueue(ucx_node::impl& self, command c) {
  {
    std::lock_guard<std::mutex> lock(self.mutex);
    if (self.commands.size() >= self.opt.max_queued_commands) {
      self.counters.sends_rejected++;
      return false;
    }
    self.commands.push_back(std::move(c));
    const uint64_t depth = self.commands.size();
    self.counters.queue_depth = depth;
    if (depth > self.counters.queue_depth_max) self.counters.queue_depth_max = depth;
  }
  self.wake();
  return true;
}
}  // namespace

void ucx_node::connect(const std::string& host_port) { connect(host_port, impl_->opt.secret); }

void ucx_node::connect(const std::string& host_port, const std::string& secret) {
  command c;
  c.kind = command::connect;
  c.target = host_port;
  c.secret = secret;
  enqueue(*impl_, std::move(c));
}

bool ucx_node::wait_up(const std::string& peer, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  return impl_->changed.wait_for(lock, timeout, [&] {
    auto it = impl_->up_names.find(peer);
    return it != impl_->up_names.end() && it->second;
  });
}

bool ucx_node::is_up(const std::string& peer) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto it = impl_->up_names.find(peer);
  return it != impl_->up_names.end() && it->second;
}

std::vector<std::string> ucx_node::peers_up() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<std::string> out;
  for (const auto& [n, up] : impl_->up_names)
    if (up) out.push_back(n);
  return out;
}

bool ucx_node::send(const std::string& peer, frame_header h, std::vector<std::byte> payload) {
  if (!is_up(peer)) {
    impl_->counters.sends_rejected++;
    return false;
  }
  h.payload_size = payload.size();
  command c;
  c.kind = command::send;
  c.target = peer;
  c.header = h;
  c.payload = std::move(payload);
  return enqueue(*impl_, std::move(c));
}

bool ucx_node::send_bulk(const std::string& peer, frame_header h, const void* data,
                         std::function<void(bool)> done) {
  if (!is_up(peer)) {
    impl_->counters.sends_rejected++;
    return false;
  }
  command c;
  c.kind = command::send_bulk;
  c.target = peer;
  c.header = h;
  c.bulk = data;
  c.done = std::move(done);
  return enqueue(*impl_, std::move(c));
}

const ucx_node_counters& ucx_node::counters() const { return impl_->counters; }

void ucx_node::hold_polling() {
  if (impl_->polling_holds.fetch_add(1) == 0) impl_->wake();
}
void ucx_node::release_polling() { impl_->polling_holds.fetch_sub(1); }

}  // namespace msomni::transport
