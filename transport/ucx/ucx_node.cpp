// ucx_node: UCX context/worker/listener/endpoints behind a sleeping progress thread.
#include "ucx/ucx_node_impl.hpp"
#include "ucx/ucx_endpoint_close.hpp"

#include "core/check.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace msomni::transport {

using namespace detail;

namespace {
constexpr unsigned am_id = 17;
}  // namespace

namespace {

void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  static_cast<ucx_node::impl*>(arg)->mark_down(ep, std::string("endpoint error: ") + ucs_status_string(status));
}

ucs_status_t am_callback(void* arg, const void* header, size_t header_length, void* data,
                         size_t length, const ucp_am_recv_param_t* param) {
  return static_cast<ucx_node::impl*>(arg)->on_am(header, header_length, data, length, param);
}

void conn_callback(ucp_conn_request_h req, void* arg) {
  static_cast<ucx_node::impl*>(arg)->on_conn_request(req);
}

void send_done(void* request, ucs_status_t status, void* user) {
  std::unique_ptr<send_ctx> ctx(static_cast<send_ctx*>(user));
  if (ctx->done) ctx->done(status == UCS_OK);
  ucp_request_free(request);
}

void recv_done(void* request, ucs_status_t status, size_t, void* user) {
  std::unique_ptr<recv_ctx> ctx(static_cast<recv_ctx*>(user));
  auto* self = ctx->owner;
  if (status == UCS_OK) {
    self->counters.frames_received++;
    self->counters.bytes_received += ctx->header.payload_size;
  }
  if (self->h.on_bulk_done) self->h.on_bulk_done(ctx->peer, ctx->header, ctx->buffer, status == UCS_OK);
  ucp_request_free(request);
}

// UCX 1.13 offers peer-failure handling only on TCP and CMA: asking for it on every
// endpoint keeps same-host peers off shared memory (sysv/posix eager + CMA rendezvous).
// Same-host endpoints therefore ask for no UCX error mode (when shared_memory is on). They
// keep the error callback, which UCX still calls when the connection manager sees the peer
// go (measured: kill -9 reported within milliseconds), and the keep-alives below catch what
// it misses. Both sides decide from the same pair of addresses, so they agree.
ucp_ep_params_t ep_params(ucx_node::impl* self, bool same_host) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.err_mode = same_host && self->opt.shared_memory ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = on_ep_error;
  p.err_handler.arg = self;
  return p;
}

// True when `ip` belongs to this host: loopback or one of its interfaces' IPv4 addresses.
bool is_local_ipv4(const in_addr& ip) {
  if ((ntohl(ip.s_addr) >> 24) == 127) return true;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool local = false;
  for (auto* i = list; i && !local; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
      local = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == ip.s_addr;
  ::freeifaddrs(list);
  return local;
}

sockaddr_in parse_address(const std::string& host, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
    throw std::invalid_argument("not an IPv4 address: \"" + host + "\"");
  return a;
}

}  // namespace

void ucx_node::impl::start() {
  ucp_config_t* config = nullptr;
  MSOMNI_CHECK_UCX(ucp_config_read(nullptr, nullptr, &config));
  ucp_config_modify(config, "CM_REUSEADDR", "y");  // restartable on the same port at once
  // Every endpoint gets an indirect id. A frame sent with UCP_AM_SEND_FLAG_REPLY names the
  // receiver's endpoint by id; with the default (direct ids for endpoints without peer error
  // handling, i.e. same-host shared memory) a frame still in flight when we force-close that
  // endpoint of a departed peer is looked up through a freed pointer and UCX aborts the
  // process (ucp_worker.inl assertion "ep->worker == worker"). An indirect id of a closed
  // endpoint is simply not found and the frame is dropped.
  MSOMNI_CHECK_UCX(ucp_config_modify(config, "PROTO_INDIRECT_ID", "on"));
  // UCX's TCP transport listens on every device it may use; a value set by whoever starts
  // the process (e.g. to pick an InfiniBand port) wins over ours.
  const auto devices = ucx_net_devices_for(opt.listen_host);
  if (!devices.empty() && !std::getenv("UCX_NET_DEVICES"))
    MSOMNI_CHECK_UCX(ucp_config_modify(config, "NET_DEVICES", devices.c_str()));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  const auto st = ucp_init(&params, config, &context);
  ucp_config_release(config);
  MSOMNI_CHECK_UCX(st);

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  MSOMNI_CHECK_UCX(ucp_worker_create(context, &wp, &worker));
  MSOMNI_CHECK_UCX(ucp_worker_get_efd(worker, &worker_fd));

  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hp.id = am_id;
  hp.cb = am_callback;
  hp.arg = this;
  MSOMNI_CHECK_UCX(ucp_worker_set_am_recv_handler(worker, &hp));

  const auto addr = parse_address(opt.listen_host, opt.listen_port);
  ucp_listener_params_t lp{};
  lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  lp.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  lp.sockaddr.addrlen = sizeof addr;
  lp.conn_handler.cb = conn_callback;
  lp.conn_handler.arg = this;
  MSOMNI_CHECK_UCX(ucp_listener_create(worker, &lp, &listener));
  ucp_listener_attr_t la{};
  la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  MSOMNI_CHECK_UCX(ucp_listener_query(listener, &la));
  port = ntohs(reinterpret_cast<const sockaddr_in*>(&la.sockaddr)->sin_port);

  wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (wake_fd < 0 || epoll_fd < 0) throw std::runtime_error("ucx_node: eventfd/epoll_create1 failed");
  for (int fd : {wake_fd, worker_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
      throw std::runtime_error("ucx_node: epoll_ctl failed");
  }
  thread = std::thread([this] { run(); });
}

void ucx_node::impl::run() {
  while (!stopping.load()) {
    drain_commands();
    while (ucp_worker_progress(worker) != 0) {
    }
    close_endpoints();
    check_keepalives();
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!commands.empty()) continue;
    }
    const auto st = ucp_worker_arm(worker);
    if (st == UCS_ERR_BUSY) continue;
    epoll_event events[2];
    const int timeout_ms = static_cast<int>(std::max<int64_t>(1, opt.keepalive_interval.count() / 2));
    const int n = ::epoll_wait(epoll_fd, events, 2, timeout_ms);
    for (int i = 0; i < n; ++i)
      if (events[i].data.fd == wake_fd) {
        uint64_t v;
        [[maybe_unused]] auto r = ::read(wake_fd, &v, sizeof v);
      }
  }
  shutdown();
}

void ucx_node::impl::drain_commands() {
  std::deque<command> batch;
  {
    std::lock_guard<std::mutex> lock(mutex);
    batch.swap(commands);
    counters.queue_depth = 0;
  }
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
  if (auto it = by_ep.find(ep); it != by_ep.end()) it->second.last_sent = steady::now();
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

void ucx_node::impl::do_connect(const std::string& host_port, const std::string& secret) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("expected host:port, got " + host_port);
  const auto addr = parse_address(host_port.substr(0, colon),
                                  static_cast<uint16_t>(std::stoul(host_port.substr(colon + 1))));
  auto p = ep_params(this, is_local_ipv4(addr.sin_addr));
  p.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
  p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  p.sockaddr.addrlen = sizeof addr;
  ucp_ep_h ep = nullptr;
  MSOMNI_CHECK_UCX(ucp_ep_create(worker, &p, &ep));
  auto& st = by_ep[ep] = peer_state{};
  st.shared_memory = p.err_mode == UCP_ERR_HANDLING_MODE_NONE;
  st.address = host_port;
  st.secret = secret;
  st.created = steady::now();
  hello_start(ep, st);
}

void ucx_node::impl::on_conn_request(ucp_conn_request_h req) {
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  const bool known = ucp_conn_request_query(req, &attr) == UCS_OK && attr.client_address.ss_family == AF_INET;
  const auto* client = reinterpret_cast<const sockaddr_in*>(&attr.client_address);
  std::string address = "unknown address";
  if (known) {
    char ip[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &client->sin_addr, ip, sizeof ip);
    address = std::string(ip) + ":" + std::to_string(ntohs(client->sin_port));
  }
  if (pending_incoming() >= opt.max_pending_peers) {
    ucp_listener_reject(listener, req);
    report_refused(address, std::to_string(opt.max_pending_peers) + " connections already wait for their hello");
    return;
  }
  auto p = ep_params(this, known && is_local_ipv4(client->sin_addr));
  p.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
  p.conn_request = req;
  ucp_ep_h ep = nullptr;
  if (ucp_ep_create(worker, &p, &ep) != UCS_OK) {
    MSOMNI_LOG(warn, "ucx") << opt.name << ": could not accept a connection from " << address;
    return;
  }
  auto& st = by_ep[ep] = peer_state{};  // named when its HELLO arrives
  st.shared_memory = p.err_mode == UCP_ERR_HANDLING_MODE_NONE;
  st.incoming = true;
  st.address = address;
  st.secret = opt.secret;
  st.created = steady::now();
}

ucp_ep_h ucx_node::impl::ep_of(const std::string& peer) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = by_name.find(peer);
  if (it == by_name.end() || !up_names[peer]) return nullptr;
  return it->second;
}

ucs_status_t ucx_node::impl::on_am(const void* header, size_t header_length, void* data,
                                   size_t length, const ucp_am_recv_param_t* param) {
  decode_error why;
  const auto hdr = decode_header({static_cast<const std::byte*>(header), header_length}, why);
  const bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  // Returning UCS_OK without ucp_am_recv_data_nbx drops a rendezvous descriptor and completes
  // the sender (ucp_def.h). Calling ucp_am_data_release as well dropped it twice: the sender
  // got two acks and UCX aborted the process (ucp_rndv_ats_handler assertion).
  auto release = [] { return UCS_OK; };
  if (!hdr) {
    drop(to_string(why));
    return release();
  }
  if (hdr->payload_size != length) {
    drop("payload_size_mismatch");
    return release();
  }
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
    drop("no reply endpoint");
    return release();
  }
  ucp_ep_h ep = param->reply_ep;
  auto it = by_ep.find(ep);
  if (it == by_ep.end()) {
    drop("unknown endpoint");
    return release();
  }
  auto& st = it->second;
  st.last_heard = steady::now();
  if (!st.up) {
    // Nothing from a peer that is not up reaches a handler: only its HELLO exchange counts.
    if (rndv) {
      drop("rendezvous frame before hello");
      if (!st.secret.empty()) refuse(ep, "sent data before proving the job secret");
      return release();
    }
    on_hello_frame(ep, st, *hdr, {static_cast<const std::byte*>(data), length});
    return UCS_OK;
  }
  if (hdr->kind == frame_kind::hello || hdr->kind == frame_kind::challenge ||
      hdr->kind == frame_kind::challenge_reply || hdr->kind == frame_kind::proof)
    return release();  // a repeated hello of a peer that is up
  counters.frames_received++;
  switch (hdr->kind) {
    case frame_kind::keepalive: return UCS_OK;
    case frame_kind::goodbye: mark_down(ep, peer_left_reason); return UCS_OK;
    case frame_kind::actor_message:
      counters.bytes_received += length;
      if (rndv) return release();  // actor messages are always eager
      if (h.on_frame) h.on_frame(st.name, *hdr, {static_cast<const std::byte*>(data), length});
      return UCS_OK;
    default: break;
  }
  // bulk / collective
  std::byte* buffer = h.on_bulk_buffer ? h.on_bulk_buffer(st.name, *hdr) : nullptr;
  if (!buffer) {
    drop("no buffer for bulk frame");
    return release();
  }
  if (!rndv) {
    if (length) std::memcpy(buffer, data, length);
    counters.bytes_received += length;
    if (h.on_bulk_done) h.on_bulk_done(st.name, *hdr, buffer, true);
    return UCS_OK;
  }
  auto ctx = std::make_unique<recv_ctx>();
  ctx->owner = this;
  ctx->peer = st.name;
  ctx->header = *hdr;
  ctx->buffer = buffer;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.recv_am = recv_done;
  p.user_data = ctx.get();
  void* req = ucp_am_recv_data_nbx(worker, data, buffer, length, &p);
  if (req == nullptr) {
    counters.bytes_received += length;
    if (h.on_bulk_done) h.on_bulk_done(st.name, *hdr, buffer, true);
    return UCS_OK;
  }
  if (UCS_PTR_IS_ERR(req)) {
    if (h.on_bulk_done) h.on_bulk_done(st.name, *hdr, buffer, false);
    return UCS_OK;
  }
  ctx.release();
  return UCS_OK;
}

void ucx_node::impl::mark_down(ucp_ep_h ep, const std::string& reason) {
  auto it = by_ep.find(ep);
  if (it == by_ep.end()) return;
  const std::string name = it->second.name;
  const bool was_up = it->second.up;
  // An accepted peer that goes before it proved the secret is as refused as a wrong proof.
  const bool unproven = it->second.incoming && !it->second.secret.empty() && it->second.stage != hello_stage::done;
  const std::string address = it->second.address;
  by_ep.erase(it);
  to_close.push_back(ep);
  if (unproven) report_refused(address, "left before proving the job secret (" + reason + ")");
  if (name.empty() || !was_up) return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    up_names[name] = false;
  }
  changed.notify_all();
  counters.peers_down++;
  if (reason == peer_left_reason) {
    MSOMNI_LOG(debug, "ucx") << opt.name << ": peer " << name << " left";
  } else {
    MSOMNI_LOG(info, "ucx") << opt.name << ": peer " << name << " down: " << reason;
  }
  if (h.on_peer) h.on_peer(name, false, reason);
}

void ucx_node::impl::check_keepalives() {
  expire_pending_hellos();
  const auto now = steady::now();
  const auto silent_limit = opt.keepalive_interval * opt.keepalive_misses;
  std::vector<ucp_ep_h> silent, due;
  for (auto& [ep, st] : by_ep) {
    if (!st.up) continue;
    if (now - st.last_heard > silent_limit) silent.push_back(ep);
    else if (now - st.last_sent >= opt.keepalive_interval) due.push_back(ep);
  }
  for (auto ep : silent)
    mark_down(ep, "silent for " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(silent_limit).count()) +
                      " ms (missed keep-alives)");
  for (auto ep : due) {
    auto ctx = std::make_unique<send_ctx>();
    ctx->header = encode_header({frame_kind::keepalive, 0, 0, 0, 0, 0});
    do_send(ep, std::move(ctx), UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER, nullptr, 0);
  }
}

// Endpoints of peers marked down. Forced: a flush towards a dead same-host peer would never
// complete. UCX asks for peer error mode on both sides of a forced close (ucp.h), which
// same-host endpoints lack; the side that could misbehave is the peer we declared down.
void ucx_node::impl::close_endpoints() {
  for (auto ep : to_close) close_endpoint_forced(worker, ep);
  to_close.clear();
}

void ucx_node::impl::shutdown() {
  // Say goodbye so peers see a clean leave, flush, then tear down in reverse order.
  std::vector<ucp_ep_h> eps;
  for (auto& [ep, st] : by_ep)
    if (st.up) {
      auto ctx = std::make_unique<send_ctx>();
      ctx->header = encode_header({frame_kind::goodbye, 0, 0, 0, 0, 0});
      do_send(ep, std::move(ctx), UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER, nullptr, 0);
    }
  for (auto& [ep, st] : by_ep) eps.push_back(ep);
  const auto deadline = steady::now() + std::chrono::milliseconds(200);
  while (steady::now() < deadline && ucp_worker_progress(worker) != 0) {
  }
  for (auto ep : eps) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = 0;  // flush then close
    void* req = ucp_ep_close_nbx(ep, &p);
    if (req && !UCS_PTR_IS_ERR(req)) {
      const auto until = steady::now() + std::chrono::milliseconds(500);
      while (ucp_request_check_status(req) == UCS_INPROGRESS && steady::now() < until)
        ucp_worker_progress(worker);
      if (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_request_cancel(worker, req);
      ucp_request_free(req);
    }
  }
  by_ep.clear();
  close_endpoints();
  if (listener) ucp_listener_destroy(listener);
  if (worker) ucp_worker_destroy(worker);
  if (context) ucp_cleanup(context);
  listener = nullptr, worker = nullptr, context = nullptr;
}

ucx_node::ucx_node(ucx_node_options options, ucx_node_handlers handlers) : impl_(std::make_unique<impl>()) {
  impl_->opt = std::move(options);
  impl_->h = std::move(handlers);
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

}  // namespace msomni::transport
