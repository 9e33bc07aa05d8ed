// ucx_node's endpoints: connecting out to host:port, accepting connections in (bounded by
// max_pending_peers), and the error mode each endpoint asks UCX for.
#include "ucx/ucx_node_impl.hpp"
#include "ucx/ucx_sockaddr.hpp"

#include "core/check.hpp"

#include <arpa/inet.h>

namespace msomni::transport {

using namespace detail;

namespace {

void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  static_cast<ucx_node::impl*>(arg)->mark_down(ep, std::string("endpoint error: ") + ucs_status_string(status));
}

// UCX 1.13 offers peer-failure handling only on TCP and CMA: asking for it on every
// endpoint keeps same-host peers off shared memory (sysv/posix eager + CMA rendezvous).
// Same-host endpoints therefore ask for no UCX error mode (when shared_memory is on). They
// keep the error callback, which UCX still calls when the connection manager sees the peer
// go (measured: kill -9 reported within milliseconds), and the keep-alives
// (ucx_node_liveness.cpp) catch what it misses. Both sides decide from the same pair of
// addresses, so they agree.
ucp_ep_params_t ep_params(ucx_node::impl* self, bool same_host) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.err_mode = same_host && self->opt.shared_memory ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = on_ep_error;
  p.err_handler.arg = self;
  return p;
}

}  // namespace

void ucx_node::impl::do_connect(const std::string& host_port, const std::string& secret) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("expected host:port, got " + host_port);
  const auto addr = sockaddr_of(host_port.substr(0, colon),
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
  st.liveness.created = steady::now();
  hello_start(ep, st);
}

void ucx_node::impl::on_conn_request(ucp_conn_request_h req) {
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  const bool known = ucp_conn_request_query(req, &attr) == UCS_OK && attr.client_address.ss_family == AF_INET;
  const auto* client = reinterpret_cast<const sockaddr_in*>(&attr.client_address);
  const std::string address = known ? host_port_of(*client) : "unknown address";
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
  st.liveness.created = steady::now();
}

}  // namespace msomni::transport
