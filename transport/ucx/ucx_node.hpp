// One UCX context + worker per process, with a progress thread that sleeps on the worker's
// event fd while idle (no busy polling). Listens on host:port, connects to peers by address,
// learns peer names from a HELLO exchange, and carries frames (frame.hpp) as UCX active
// messages: small frames eager and ordered per peer, bulk frames by rendezvous straight into
// a buffer the receiver chooses. A peer whose endpoint fails (UCX error callback) or that is
// silent for keepalive_interval x keepalive_misses is reported down, exactly once (the rule:
// peer_liveness.hpp).
//
// Peer states:  connecting --HELLO--> up --error/timeout/goodbye--> down (final)
//                connecting --no HELLO, or no proof of the secret--> refused (final)
//
// Authentication: a node with a `secret` (the job's token) accepts a peer only when its
// HELLO proves the same secret, and proves it back (peer_auth.hpp); it drops, counts and
// reports every other frame and peer. Until a peer is up, nothing it sends reaches a
// handler. A node without a secret says a plain HELLO, as before.
//
// Listening: UCX's TCP transport opens listening sockets of its own on every network
// device; the node keeps them to loopback and listen_host's interface (UCX_NET_DEVICES,
// unless that is set in the environment).
//
// Threading: every UCX call happens on the progress thread. send()/connect() enqueue
// commands (bounded queue) and wake it through an eventfd. Handlers run on the progress
// thread and must not block.
#pragma once

#include "frame/frame.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace msomni::transport {

// The reason a peer that left cleanly (sent goodbye) is reported down with.
inline constexpr const char* peer_left_reason = "peer said goodbye";

struct ucx_node_options {
  std::string name;                         // unique node name in the job
  std::string listen_host = "127.0.0.1";    // loopback by default
  uint16_t listen_port = 0;                 // 0 = any free port
  std::chrono::milliseconds keepalive_interval{250};
  int keepalive_misses = 6;                 // silent this many intervals -> down
  size_t max_queued_commands = 1 << 16;     // bound of the send queue
  uint64_t eager_bulk_max = 256 << 10;      // bulk frames up to this size go eager (copied)
  // Same-host peers over UCX shared memory (sysv/posix + CMA) instead of TCP loopback; see
  // ep_params() in ucx_node_connect.cpp for what that means for failure detection.
  bool shared_memory = true;
  uint64_t eager_bulk_max_shared_memory = 64 << 10;  // the same bound for same-host peers
  // The job's secret: peers connecting here must prove it, and connect() proves it to
  // the peers it reaches. Empty: plain HELLOs, and authenticated ones are refused.
  std::string secret;
  std::chrono::milliseconds hello_timeout{10000};  // an accepted peer not up by then is refused
  size_t max_pending_peers = 64;                   // accepted connections not yet up, at most
  // Latency mode: after any traffic the progress thread keeps polling the worker this long
  // before it sleeps on the event fd, so a reply that comes soon is taken without a wake-up
  // (bounded: an idle node sleeps), yielding the core between polls to any thread that is
  // ready. 0 (the default): sleep as soon as there is nothing to do.
  // The control plane's nodes use control_plane_busy_poll; ranks do not, because on
  // oversubscribed cores a polling progress thread takes CPU from the caller's reductions and
  // roughly halves all-reduce bandwidth below 16 MiB (measured with 4 ranks on 2 cores);
  // their collectives hold the poll on only while they run (hold_polling).
  std::chrono::microseconds busy_poll{0};
};

// The latency mode of the control process, the node agents, msomni-sched and the msomni CLI.
inline constexpr std::chrono::microseconds control_plane_busy_poll{50};

struct ucx_node_handlers {
  // An eager frame (hello/keepalive are handled inside). `payload` is valid during the call.
  std::function<void(const std::string& peer, const frame_header&, std::span<const std::byte>)> on_frame;
  // Where to put a bulk/collective payload of h.payload_size bytes; nullptr drops it.
  std::function<std::byte*(const std::string& peer, const frame_header&)> on_bulk_buffer;
  // The payload is in the buffer (ok) or the transfer failed (!ok).
  std::function<void(const std::string& peer, const frame_header&, std::byte* buffer, bool ok)> on_bulk_done;
  // A peer came up (up = true) or went down, with the reason.
  std::function<void(const std::string& peer, bool up, const std::string& reason)> on_peer;
  // A peer was refused (no HELLO, or no proof of the secret): its host:port and why. Called
  // for the first 16 refusals and then for every power of two, so a flood stays bounded.
  std::function<void(const std::string& address, const std::string& reason)> on_refused;
};

struct ucx_node_counters {
  std::atomic<uint64_t> frames_sent{0};
  std::atomic<uint64_t> frames_received{0};
  std::atomic<uint64_t> frames_dropped{0};     // malformed, unauthenticated peer, or no buffer
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> sends_rejected{0};     // queue full or peer not up
  std::atomic<uint64_t> peers_down{0};
  std::atomic<uint64_t> peers_silent{0};       // of peers_down: missed keepalive_misses keep-alives
  std::atomic<uint64_t> peers_refused{0};      // failed or never finished the HELLO exchange
  std::atomic<uint64_t> peers_superseded{0};   // of peers_down: a quiet connection replaced by the peer's new one
  std::atomic<uint64_t> own_pauses{0};         // this node stood still past a keep-alive interval
  std::atomic<uint64_t> queue_depth{0};
  std::atomic<uint64_t> queue_depth_max{0};
};

class ucx_node {
 public:
  ucx_node(ucx_node_options options, ucx_node_handlers handlers);
  ~ucx_node();
  ucx_node(const ucx_node&) = delete;
  ucx_node& operator=(const ucx_node&) = delete;

  const std::string& name() const;
  std::string address() const;  // "host:port" this node listens on

  // Starts connecting; the peer becomes usable when its HELLO arrives. The first form
  // proves options.secret (if any), the second `secret` (empty: a plain HELLO).
  void connect(const std::string& host_port);
  void connect(const std::string& host_port, const std::string& secret);
  bool wait_up(const std::string& peer, std::chrono::milliseconds timeout) const;
  bool is_up(const std::string& peer) const;
  std::vector<std::string> peers_up() const;

  // Eager, ordered per peer. False when the peer is not up or the queue is full.
  bool send(const std::string& peer, frame_header h, std::vector<std::byte> payload);
  // Zero-copy: `data` (h.payload_size bytes) must stay valid until `done` runs.
  bool send_bulk(const std::string& peer, frame_header h, const void* data,
                 std::function<void(bool ok)> done);

  const ucx_node_counters& counters() const;

  // While held (counted: nested holds add up), the progress thread polls without sleeping,
  // yielding the core between polls: for the span of a collective, whose frames come in a
  // burst and whose caller waits for each.
  void hold_polling();
  void release_polling();

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

// The local IPv4 address this host would use to reach `host` (an IPv4 address): loopback
// for loopback, else the address of the interface the route goes through. For nodes that
// only connect out, so that they listen where their peers can reach them and nowhere else.
std::string local_address_towards(const std::string& host);

}  // namespace msomni::transport
