// ucx_node's progress loop: run the queued commands, progress the worker, close endpoints
// of departed peers, check liveness, then, once opt.busy_poll has passed without traffic,
// sleep on the worker's event fd and the wake fd. Sending lives here too: every send goes
// through do_send.
#include "ucx/ucx_node_impl.hpp"
#include "ucx/ucx_endpoint_close.hpp"

#include <sched.h>
#include <sys/epoll.h>

namespace msomni::transport {

using namespace detail;

namespace {

void send_done(void* request, ucs_status_t status, void* user) {
  std::unique_ptr<send_ctx> ctx(static_cast<send_ctx*>(user));
  if (ctx->done) ctx->done(status == UCS_OK);
  ucp_request_free(request);
}

}  // namespace

void ucx_node::impl::run() {
  auto last_traffic = steady::now();
  while (!stopping.load()) {
    bool traffic = drain_commands();
    while (ucp_worker_progress(worker) != 0) traffic = true;
    close_endpoints();
    check_keepalives();
    const auto now = steady::now();
    if (traffic) last_traffic = now;
    const bool held = polling_holds.load(std::memory_order_relaxed) > 0;
    if (held || (opt.busy_poll.count() > 0 && now - last_traffic < opt.busy_poll)) {  // a reply may be near
      // Polling gives way to any thread of this machine that is ready: on few cores the actor
      // thread a frame just woke would otherwise wait for the poller's time slice to end
      // (measured on 2 cores: CAF request/response 63 -> 19 us one way with sharing actor threads).
      ::sched_yield();
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!commands.empty()) continue;
    }
    const auto st = ucp_worker_arm(worker);
    if (st == UCS_ERR_BUSY) continue;
    epoll_event events[2];
    const int n = ::epoll_wait(epoll_fd, events, 2, liveness.idle_wait_ms());
    for (int i = 0; i < n; ++i)
      if (events[i].data.fd == wake_fd) {
        uint64_t v;
        [[maybe_unused]] auto r = ::read(wake_fd, &v, sizeof v);
      }
    if (n > 0) last_traffic = steady::now();
  }
  shutdown();
}

bool ucx_node::impl::drain_commands() {
  std::deque<command> batch;
  {
    std::lock_guard<std::mutex> lock(mutex);
    batch.swap(commands);
    counters.queue_depth = 0;
  }
  const bool any = !batch.empty();
  for (auto& c : batch) {
    if (c.kind == command::connect) {
      try {
        do_connect(c.target, c.secret);
      } catch (const std::exception& e) {
        MSOMNI_LOG(error, "ucx") << opt.name << ": connect to " << c.target << " failed: " << e.what();
      }
      continue;
    }
    ucp_ep_h ep = ep_of(c.target);
    if (!ep) {
      counters.sends_rejected++;
      if (c.done) c.done(false);
      continue;
    }
    auto ctx = std::make_unique<send_ctx>();
    ctx->header = encode_header(c.header);
    ctx->done = std::move(c.done);
    ctx->owner = this;
    if (c.kind == command::send) {
      ctx->payload = std::move(c.payload);
      const void* data = ctx->payload.data();
      const size_t n = ctx->payload.size();
      do_send(ep, std::move(ctx), UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER, data, n);
    } else {
      // Up to eager_bulk_max bytes an eager copy beats the rendezvous handshake on TCP; on
      // shared memory the single-copy CMA rendezvous wins much earlier.
      auto it = by_ep.find(ep);
      const bool shm = it != by_ep.end() && it->second.shared_memory;
      const uint64_t eager_max = shm ? opt.eager_bulk_max_shared_memory : opt.eager_bulk_max;
      const uint32_t flags = UCP_AM_SEND_FLAG_REPLY |
                             (c.header.payload_size <= eager_max ? static_cast<uint32_t>(UCP_AM_SEND_FLAG_EAGER) : 0u);
      do_send(ep, std::move(ctx), flags, c.bulk, c.header.payload_size);
    }
  }
  return any;
}

void ucx_node::impl::do_send(ucp_ep_h ep, std::unique_ptr<send_ctx> ctx, uint32_t flags,
                             const void* data, size_t n) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.flags = flags;
  p.cb.send = send_done;
  p.user_data = ctx.get();
  auto* raw = ctx.get();
  void* req = ucp_am_send_nbx(ep, am_id, raw->header.data(), raw->header.size(), data, n, &p);
  counters.frames_sent++;
  counters.bytes_sent += n;
  if (auto it = by_ep.find(ep); it != by_ep.end()) it->second.liveness.last_sent = steady::now();
  if (req == nullptr) {  // completed in place
    if (raw->done) raw->done(true);
    return;
  }
  if (UCS_PTR_IS_ERR(req)) {
    MSOMNI_LOG(warn, "ucx") << opt.name << ": send failed: " << ucs_status_string(UCS_PTR_STATUS(req));
    if (raw->done) raw->done(false);
    return;
  }
  ctx.release();  // send_done owns it now
}

ucp_ep_h ucx_node::impl::ep_of(const std::string& peer) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = by_name.find(peer);
  if (it == by_name.end() || !up_names[peer]) return nullptr;
  return it->second;
}

// Endpoints of peers marked down. Forced: a flush towards a dead same-host peer would never
// complete. UCX asks for peer error mode on both sides of a forced close (ucp.h), which
// same-host endpoints lack; the side that could misbehave is the peer we declared down.
void ucx_node::impl::close_endpoints() {
  for (auto ep : to_close) close_endpoint_forced(worker, ep);
  to_close.clear();
}

}  // namespace msomni::transport
