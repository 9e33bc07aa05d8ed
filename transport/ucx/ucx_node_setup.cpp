// ucx_node's set-up and teardown: the UCX context, worker, active-message handler and
// listener, the epoll set the progress thread sleeps on, and the goodbye-flush-close
// sequence undone in reverse order.
#include "ucx/ucx_node_impl.hpp"
#include "ucx/ucx_log_filter.hpp"
#include "ucx/ucx_sockaddr.hpp"

#include "core/check.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <cstdlib>

namespace msomni::transport {

using namespace detail;

namespace {

ucs_status_t am_callback(void* arg, const void* header, size_t header_length, void* data,
                         size_t length, const ucp_am_recv_param_t* param) {
  return static_cast<ucx_node::impl*>(arg)->on_am(header, header_length, data, length, param);
}

void conn_callback(ucp_conn_request_h req, void* arg) {
  static_cast<ucx_node::impl*>(arg)->on_conn_request(req);
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
  install_ucx_log_filter();  // peer-gone errors of a close are not errors (ucx_log_filter.hpp)
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

  const auto addr = sockaddr_of(opt.listen_host, opt.listen_port);
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

void ucx_node::impl::shutdown() {
  // Say goodbye so peers see a clean leave, flush, then tear down in reverse order.
  const ucx_closing_scope closing;
  std::vector<ucp_ep_h> eps;
  for (auto& [ep, st] : by_ep)
    if (st.up) {
      auto ctx = std::make_unique<send_ctx>();
      ctx->header = encode_header({frame_kind::goodbye, 0, 0, 0, 0, 0});
      do_send(ep, std::move(ctx), UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER, nullptr, 0);
    }
  // Wait a little for the peers' own goodbyes: a peer that leaves too (the other ranks at the
  // end of a job) is then marked down and its endpoint closed at once (close_endpoints),
  // instead of flushed towards a process that may already be gone. Such a flush fails with
  // "Endpoint timeout", which UCX logs as an ERROR on same-host endpoints (no peer error
  // mode), although nothing is lost: both sides said goodbye. A peer that stays (the control
  // process) does not answer; its endpoint is flushed and closed after the wait, as before.
  const auto any_up = [this] {
    for (auto& [ep, st] : by_ep)
      if (st.up) return true;
    return false;
  };
  const auto deadline = steady::now() + std::chrono::milliseconds(100);
  while (steady::now() < deadline && any_up())
    if (ucp_worker_progress(worker) == 0) std::this_thread::yield();
  for (auto& [ep, st] : by_ep) eps.push_back(ep);  // those that did not leave (left ones are in to_close)
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

}  // namespace msomni::transport
