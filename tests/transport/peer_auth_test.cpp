// Authentication at the HELLO exchange: the proofs and payloads (pure), then two ucx_nodes in
// this process: a shared secret lets both up; no secret, a wrong one, or a secret the other
// side lacks leaves both down and the listening side reports the refused address; a raw UCX
// peer that skips the exchange has every frame dropped and counted, none delivered.
#include "ucx/peer_auth.hpp"
#include "ucx/ucx_endpoint_close.hpp"
#include "ucx/ucx_node.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

using namespace msomni::transport;
using namespace std::chrono_literals;

namespace {

auth_nonce nonce_of(uint8_t v) {
  auth_nonce n{};
  n.fill(std::byte{v});
  return n;
}

// A node whose handlers record what reached them.
struct recording_node {
  std::atomic<int> frames{0};
  std::mutex mutex;
  std::vector<std::string> refused;  // "address: reason"
  std::unique_ptr<ucx_node> node;

  explicit recording_node(const std::string& name, const std::string& secret = {}) {
    ucx_node_options o;
    o.name = name;
    o.secret = secret;
    o.hello_timeout = 1500ms;
    ucx_node_handlers h;
    h.on_frame = [this](const std::string&, const frame_header&, std::span<const std::byte>) { ++frames; };
    h.on_refused = [this](const std::string& address, const std::string& reason) {
      std::lock_guard<std::mutex> lock(mutex);
      refused.push_back(address + ": " + reason);
    };
    node = std::make_unique<ucx_node>(o, h);
  }
  std::vector<std::string> refusals() {
    std::lock_guard<std::mutex> lock(mutex);
    return refused;
  }
  bool wait_refused(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (!refusals().empty()) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
};

std::vector<std::byte> text(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// A UCX peer that connects to a node and sends frames without any HELLO exchange. The
// active-message id is the one ucx_node registers (17); a test of what a stranger can do.
struct raw_peer {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;

  explicit raw_peer(const std::string& host_port) {
    ucp_params_t p{};
    p.field_mask = UCP_PARAM_FIELD_FEATURES;
    p.features = UCP_FEATURE_AM;
    REQUIRE(ucp_init(&p, nullptr, &context) == UCS_OK);
    ucp_worker_params_t wp{};
    REQUIRE(ucp_worker_create(context, &wp, &worker) == UCS_OK);
    const auto colon = host_port.rfind(':');
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(std::stoi(host_port.substr(colon + 1))));
    ::inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &a.sin_addr);
    ucp_ep_params_t ep_p{};
    ep_p.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
    ep_p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep_p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&a);
    ep_p.sockaddr.addrlen = sizeof a;
    REQUIRE(ucp_ep_create(worker, &ep_p, &ep) == UCS_OK);
  }
  void send(frame_kind kind, const std::string& payload) {
    const auto header = encode_header({kind, 0, 1, 0, 0, payload.size()});
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    void* req = ucp_am_send_nbx(ep, 17, header.data(), header.size(), payload.data(), payload.size(), &rp);
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (req && !UCS_PTR_IS_ERR(req) && ucp_request_check_status(req) == UCS_INPROGRESS &&
           std::chrono::steady_clock::now() < until)
      ucp_worker_progress(worker);
    if (req && !UCS_PTR_IS_ERR(req)) ucp_request_free(req);
  }
  void progress_for(std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) ucp_worker_progress(worker);
  }
  ~raw_peer() {
    msomni::transport::close_endpoint_forced(worker, ep);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
  }
};

}  // namespace

TEST_CASE("proofs depend on the secret, both nonces, both names and the side") {
  const auto c = nonce_of(1), s = nonce_of(2);
  const auto base = auth_server_proof("secret", c, s, "rank-0", "control");
  CHECK(auth_same_proof(base, base));
  CHECK_FALSE(auth_same_proof(base, auth_server_proof("secreT", c, s, "rank-0", "control")));
  CHECK_FALSE(auth_same_proof(base, auth_server_proof("secret", nonce_of(3), s, "rank-0", "control")));
  CHECK_FALSE(auth_same_proof(base, auth_server_proof("secret", c, nonce_of(3), "rank-0", "control")));
  CHECK_FALSE(auth_same_proof(base, auth_server_proof("secret", c, s, "rank-1", "control")));
  CHECK_FALSE(auth_same_proof(base, auth_server_proof("secret", c, s, "rank-", "0control")));
  CHECK_FALSE(auth_same_proof(base, auth_client_proof("secret", c, s, "rank-0", "control")));  // no reflection
  CHECK_FALSE(auth_same_proof(base, std::span<const std::byte>(base.data(), base.size() - 1)));
  CHECK(auth_make_nonce() != auth_make_nonce());
}

TEST_CASE("handshake payloads round-trip and refuse malformed input") {
  const auth_challenge c{nonce_of(7), "agent-a"};
  auto back = auth_decode_challenge(auth_encode(c));
  REQUIRE(back);
  CHECK(back->name == "agent-a");
  CHECK(back->nonce == c.nonce);
  const auth_challenge_reply r{nonce_of(8), auth_proof{}, "control"};
  auto rb = auth_decode_challenge_reply(auth_encode(r));
  REQUIRE(rb);
  CHECK(rb->name == "control");
  CHECK_FALSE(auth_decode_challenge(std::vector<std::byte>(auth_nonce_size)));  // no name
  CHECK_FALSE(auth_decode_challenge_reply(std::vector<std::byte>(auth_nonce_size + auth_proof_size)));
  CHECK_FALSE(auth_decode_challenge(std::vector<std::byte>(auth_nonce_size + max_node_name + 1)));
}

TEST_CASE("nodes that share the secret come up both ways and exchange frames") {
  recording_node server("control", "s3cret"), client("rank-0", "s3cret");
  client.node->connect(server.node->address());
  REQUIRE(client.node->wait_up("control", 10s));
  REQUIRE(server.node->wait_up("rank-0", 10s));
  CHECK(client.node->send("control", {frame_kind::actor_message, 0, 0, 0, 0, 0}, text("hi")));
  for (int i = 0; i < 200 && server.frames == 0; ++i) std::this_thread::sleep_for(10ms);
  CHECK(server.frames == 1);
  CHECK(server.node->counters().peers_refused == 0);
  CHECK(server.refusals().empty());
}

TEST_CASE("a peer without the secret is refused, reported with its address, and never up") {
  recording_node server("control", "s3cret"), stranger("evil");
  stranger.node->connect(server.node->address());
  REQUIRE(server.wait_refused(10s));
  CHECK_FALSE(server.node->is_up("evil"));
  CHECK_FALSE(stranger.node->is_up("control"));
  CHECK(server.node->peers_up().empty());
  CHECK(server.node->counters().peers_refused >= 1);
  const auto r = server.refusals();
  CAPTURE(r);
  CHECK(r.front().rfind("127.0.0.1:", 0) == 0);
  CHECK(r.front().find("without proof of the job secret") != std::string::npos);
}

TEST_CASE("a wrong secret is refused on both sides, and so is a secret the listener lacks") {
  SUBCASE("wrong secret") {
    recording_node server("control", "s3cret"), client("agent-x", "guess");
    client.node->connect(server.node->address());
    REQUIRE(client.wait_refused(10s));
    CHECK(client.refusals().front().find("did not prove the job secret") != std::string::npos);
    REQUIRE(server.wait_refused(10s));  // the client left before proving anything
    CHECK_FALSE(server.node->is_up("agent-x"));
    CHECK_FALSE(client.node->is_up("control"));
  }
  SUBCASE("the listener has no secret") {
    recording_node server("sched"), client("agent-y", "s3cret");
    client.node->connect(server.node->address());
    REQUIRE(server.wait_refused(10s));
    CHECK(server.refusals().front().find("this node has no job secret") != std::string::npos);
    std::this_thread::sleep_for(300ms);
    CHECK_FALSE(client.node->is_up("sched"));
    CHECK_FALSE(server.node->is_up("agent-y"));
  }
  SUBCASE("a per-connection secret reaches a secret node from a node without one") {
    recording_node server("control", "s3cret"), cli("cli-1");
    cli.node->connect(server.node->address(), "s3cret");
    CHECK(cli.node->wait_up("control", 10s));
    CHECK(server.node->wait_up("cli-1", 10s));
  }
}

TEST_CASE("frames from a peer that skipped the hello are dropped and counted, none delivered") {
  recording_node server("control", "s3cret");
  raw_peer raw(server.node->address());
  raw.progress_for(200ms);
  const auto dropped_before = server.node->counters().frames_dropped.load();
  raw.send(frame_kind::actor_message, "not a hello");
  raw.progress_for(500ms);
  CHECK(server.frames == 0);
  CHECK(server.node->counters().frames_dropped > dropped_before);
  REQUIRE(server.wait_refused(5s));
  CHECK(server.refusals().front().find("before proving the job secret") != std::string::npos);
  CHECK(server.node->peers_up().empty());
}

TEST_CASE("a connection that never says hello is refused after hello_timeout") {
  recording_node server("control", "s3cret");
  raw_peer raw(server.node->address());
  raw.progress_for(300ms);
  CHECK(server.refusals().empty());
  raw.progress_for(2500ms);  // hello_timeout is 1.5 s here
  REQUIRE(server.wait_refused(3s));
  CHECK(server.refusals().front().find("no hello within") != std::string::npos);
}

TEST_CASE("nodes without a secret keep the plain hello") {
  recording_node a("sched"), b("job-1");
  b.node->connect(a.node->address());
  CHECK(b.node->wait_up("sched", 10s));
  CHECK(a.node->wait_up("job-1", 10s));
  CHECK(a.refusals().empty());
}
