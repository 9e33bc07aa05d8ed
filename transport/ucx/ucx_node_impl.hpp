// The inside of ucx_node, shared by its source files: ucx_node.cpp (the public interface
// and its command queue), ucx_node_setup.cpp (context, worker, listener, progress thread,
// teardown), ucx_node_connect.cpp (endpoints out and in), ucx_node_progress.cpp (the
// progress loop and sending), ucx_node_receive.cpp (frames in), ucx_node_liveness.cpp
// (keep-alives, silent and departed peers; the rule is peer_liveness.hpp),
// ucx_node_hello.cpp (the HELLO exchange, authenticated or not, and refusals) and
// ucx_listen_devices.cpp (which network devices UCX may use).
#pragma once

#include "ucx/peer_auth.hpp"
#include "ucx/peer_liveness.hpp"
#include "ucx/ucx_node.hpp"

#include "core/log.hpp"

#include <ucp/api/ucp.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace msomni::transport {

namespace detail {

using steady = std::chrono::steady_clock;

// The UCX active-message id every frame travels under.
inline constexpr unsigned am_id = 17;

struct send_ctx {
  std::array<std::byte, frame_header_size> header{};
  std::vector<std::byte> payload;
  std::function<void(bool)> done;
  ucx_node::impl* owner = nullptr;
};

struct recv_ctx {
  ucx_node::impl* owner = nullptr;
  std::string peer;
  frame_header header;
  std::byte* buffer = nullptr;
};

struct command {
  enum kind_t { connect, send, send_bulk } kind = send;
  std::string target;  // peer name or host:port
  std::string secret;  // connect: the secret to prove (empty: a plain hello)
  frame_header header;
  std::vector<std::byte> payload;
  const void* bulk = nullptr;
  std::function<void(bool)> done;
};

// Where an endpoint is in the HELLO exchange (peer_auth.hpp has the authenticated one).
enum class hello_stage : uint8_t {
  awaiting_hello,      // accepted a connection; nothing heard yet
  awaiting_reply,      // connected with a secret; our challenge is out
  awaiting_proof,      // accepted, challenged back; waiting for the peer's proof
  plain_hello_sent,    // connected without a secret; our hello is out
  done,                // named (up, or a duplicate kept down)
};

struct peer_state {
  std::string name;
  bool up = false;
  bool shared_memory = false;  // endpoint created without UCX error mode (same host)
  bool incoming = false;       // the peer connected to us
  std::string address;         // host:port, for reports about a refused peer
  hello_stage stage = hello_stage::awaiting_hello;
  std::string secret;          // what this endpoint's peer must prove (empty: nothing)
  std::string claimed_name;    // the name in a challenge, until its proof arrives
  auth_nonce nonce_c{}, nonce_s{};
  peer_liveness liveness;      // created, last heard from, last sent to
};

}  // namespace detail

struct ucx_node::impl {
  using steady = detail::steady;
  ucx_node_options opt;
  ucx_node_handlers h;
  ucx_node_counters counters;
  liveness_rule liveness;  // from opt: keep-alives, silence, hello timeout
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_listener_h listener = nullptr;
  int epoll_fd = -1;
  int wake_fd = -1;
  int worker_fd = -1;
  uint16_t port = 0;

  mutable std::mutex mutex;                 // guards commands, names, up_names
  mutable std::condition_variable changed;
  std::deque<detail::command> commands;
  std::map<std::string, ucp_ep_h> by_name;  // peers that said HELLO (up or down)
  std::map<std::string, bool> up_names;

  // Progress-thread only.
  std::map<ucp_ep_h, detail::peer_state> by_ep;
  std::vector<ucp_ep_h> to_close;
  liveness_time last_check{};  // of check_keepalives: a long gap is this node's own pause
  bool held_back = false;      // a peer's second connection waits behind its first
  std::atomic<bool> stopping{false};
  std::atomic<int> polling_holds{0};
  std::thread thread;

  void start();
  void run();
  void shutdown();
  bool drain_commands();  // true when there was one
  void do_connect(const std::string& host_port, const std::string& secret);
  void do_send(ucp_ep_h ep, std::unique_ptr<detail::send_ctx> ctx, uint32_t flags, const void* data, size_t n);
  void send_small(ucp_ep_h ep, const frame_header& h, std::vector<std::byte> payload);
  ucp_ep_h ep_of(const std::string& peer);
  void mark_down(ucp_ep_h ep, const std::string& reason);
  void check_keepalives();
  void supersede_quiet_connections();
  void bring_up(ucp_ep_h ep, detail::peer_state& st);
  void close_endpoints();
  ucs_status_t on_am(const void* header, size_t header_length, void* data, size_t length,
                     const ucp_am_recv_param_t* param);
  void on_conn_request(ucp_conn_request_h req);

  // ucx_node_hello.cpp
  void hello_start(ucp_ep_h ep, detail::peer_state& st);  // the connecting side's first frame
  // A HELLO-exchange frame (hello, challenge, challenge_reply, proof) from `ep`.
  void on_hello_frame(ucp_ep_h ep, detail::peer_state& st, const frame_header& hdr,
                      std::span<const std::byte> payload);
  void hello_step(ucp_ep_h ep, detail::peer_state& st, const frame_header& hdr, std::span<const std::byte> payload);
  void send_hello(ucp_ep_h ep);
  void accept_peer(ucp_ep_h ep, detail::peer_state& st, const std::string& name);
  void refuse(ucp_ep_h ep, const std::string& reason);
  void report_refused(const std::string& address, const std::string& reason);
  size_t pending_incoming() const;
  void expire_pending_hellos();

  void wake() const {
    const uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
  }
  void drop(const char* why) {
    const auto n = ++counters.frames_dropped;
    if ((n & (n - 1)) == 0) {  // log the 1st, 2nd, 4th, 8th... so a flood cannot flood the log
      MSOMNI_LOG(warn, "ucx") << opt.name << ": dropped frame (" << why << "), " << n << " so far";
    }
  }
};

// ucx_listen_devices.cpp: the UCX_NET_DEVICES value that keeps UCX's own listening sockets
// on `listen_host`'s interface (and loopback); empty when every device may be used.
std::string ucx_net_devices_for(const std::string& listen_host);

}  // namespace msomni::transport
