// ucx_node's HELLO exchange: plain (nodes without a secret) or authenticated (peer_auth.hpp),
// and the refusal of peers that fail it or never finish it.
#include "ucx/ucx_node_impl.hpp"

#include <cstring>

namespace msomni::transport {

using namespace detail;

namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

bool is_hello_kind(frame_kind k) {
  return k == frame_kind::hello || k == frame_kind::challenge || k == frame_kind::challenge_reply ||
         k == frame_kind::proof;
}

}  // namespace

void ucx_node::impl::send_small(ucp_ep_h ep, const frame_header& hdr, std::vector<std::byte> payload) {
  auto ctx = std::make_unique<send_ctx>();
  auto h2 = hdr;
  h2.payload_size = payload.size();
  ctx->header = encode_header(h2);
  ctx->payload = std::move(payload);
  const void* data = ctx->payload.data();
  const size_t n = ctx->payload.size();
  do_send(ep, std::move(ctx), UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER, data, n);
}

void ucx_node::impl::send_hello(ucp_ep_h ep) { send_small(ep, {frame_kind::hello, 0, 0, 0, 0, 0}, bytes_of(opt.name)); }

void ucx_node::impl::hello_start(ucp_ep_h ep, peer_state& st) {
  if (st.secret.empty()) {
    st.stage = hello_stage::plain_hello_sent;
    send_hello(ep);
    return;
  }
  st.stage = hello_stage::awaiting_reply;
  st.nonce_c = auth_make_nonce();
  send_small(ep, {frame_kind::challenge, 0, 0, 0, 0, 0}, auth_encode(auth_challenge{st.nonce_c, opt.name}));
}

void ucx_node::impl::on_hello_frame(ucp_ep_h ep, peer_state& st, const frame_header& hdr,
                                    std::span<const std::byte> payload) {
  try {  // a UCX callback: nothing may leave it
    hello_step(ep, st, hdr, payload);
  } catch (const std::exception& e) {
    refuse(ep, std::string("the hello could not be checked: ") + e.what());
  }
}

void ucx_node::impl::hello_step(ucp_ep_h ep, peer_state& st, const frame_header& hdr,
                                std::span<const std::byte> payload) {
  if (!is_hello_kind(hdr.kind) || st.stage == hello_stage::done) {
    drop(st.stage == hello_stage::done ? "frame from a peer that is not up" : "frame before hello");
    if (!st.secret.empty() && st.stage != hello_stage::done) refuse(ep, "sent a frame before proving the job secret");
    return;
  }
  const std::string name(reinterpret_cast<const char*>(payload.data()), payload.size());
  switch (st.stage) {
    case hello_stage::awaiting_hello:  // we accepted the connection
      if (hdr.kind == frame_kind::hello && st.secret.empty()) {
        if (!name.empty()) return accept_peer(ep, st, name);
      } else if (hdr.kind == frame_kind::challenge && !st.secret.empty()) {
        if (auto c = auth_decode_challenge(payload)) {
          st.claimed_name = c->name;
          st.nonce_c = c->nonce;
          st.nonce_s = auth_make_nonce();
          st.stage = hello_stage::awaiting_proof;
          const auto proof = auth_server_proof(st.secret, st.nonce_c, st.nonce_s, st.claimed_name, opt.name);
          send_small(ep, {frame_kind::challenge_reply, 0, 0, 0, 0, 0},
                     auth_encode(auth_challenge_reply{st.nonce_s, proof, opt.name}));
          return;
        }
      } else if (hdr.kind == frame_kind::hello) {
        return refuse(ep, "a hello without proof of the job secret");
      } else if (hdr.kind == frame_kind::challenge) {
        return refuse(ep, "an authenticated hello, but this node has no job secret");
      }
      return refuse(ep, "a malformed or unexpected hello");
    case hello_stage::awaiting_proof:
      if (hdr.kind == frame_kind::proof &&
          auth_same_proof(auth_client_proof(st.secret, st.nonce_c, st.nonce_s, st.claimed_name, opt.name), payload))
        return accept_peer(ep, st, st.claimed_name);
      return refuse(ep, "a wrong proof of the job secret");
    case hello_stage::awaiting_reply:  // we connected with a secret
      if (hdr.kind == frame_kind::challenge_reply) {
        auto r = auth_decode_challenge_reply(payload);
        if (r && auth_same_proof(auth_server_proof(st.secret, st.nonce_c, r->nonce, opt.name, r->name), r->proof)) {
          st.nonce_s = r->nonce;
          // Sent before any frame of ours: the peer reads it first (one ordered endpoint).
          const auto proof = auth_client_proof(st.secret, st.nonce_c, st.nonce_s, opt.name, r->name);
          send_small(ep, {frame_kind::proof, 0, 0, 0, 0, 0}, std::vector<std::byte>(proof.begin(), proof.end()));
          return accept_peer(ep, st, r->name);
        }
        return refuse(ep, "the peer did not prove the job secret (wrong token?)");
      }
      return refuse(ep, hdr.kind == frame_kind::hello ? "the peer answered without the job secret"
                                                      : "a malformed or unexpected hello");
    case hello_stage::plain_hello_sent:  // we connected without a secret
      if (hdr.kind == frame_kind::hello && !name.empty()) return accept_peer(ep, st, name);
      return refuse(ep, "the peer asks for a job secret this node does not have");
    case hello_stage::done: break;
  }
}

void ucx_node::impl::accept_peer(ucp_ep_h ep, peer_state& st, const std::string& name) {
  st.stage = hello_stage::done;
  st.name = name;
  bool second = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto known = by_name.find(name);
    second = known != by_name.end() && known->second != ep && up_names[name];
  }
  if (!second) return bring_up(ep, st);
  // A second connection from a peer we already talk to: the first stays for the order of
  // frames until it goes quiet (supersede_quiet_connections).
  st.up = false;
  held_back = true;
  supersede_quiet_connections();
}

// `ep` is the peer's connection from now on: up, named, told of, and answered with our hello
// when the peer sent a plain one (the connecting side learns our name).
void ucx_node::impl::bring_up(ucp_ep_h ep, peer_state& st) {
  st.up = true;
  {
    std::lock_guard<std::mutex> lock(mutex);
    by_name[st.name] = ep;
    up_names[st.name] = true;
  }
  changed.notify_all();
  if (st.incoming && st.secret.empty()) send_hello(ep);
  if (h.on_peer) h.on_peer(st.name, true, "hello");
}

void ucx_node::impl::refuse(ucp_ep_h ep, const std::string& reason) {
  auto it = by_ep.find(ep);
  if (it == by_ep.end()) return;
  it->second.stage = hello_stage::done;  // reported here, not again by mark_down
  report_refused(it->second.address, reason);
  mark_down(ep, "refused: " + reason);
}

void ucx_node::impl::report_refused(const std::string& address, const std::string& reason) {
  const auto n = ++counters.peers_refused;
  if (n > 16 && (n & (n - 1)) != 0) return;  // a flood of refusals cannot flood the journal
  MSOMNI_LOG(warn, "ucx") << opt.name << ": refused peer " << address << ": " << reason << " (" << n << " so far)";
  if (h.on_refused) h.on_refused(address, reason + " (" + std::to_string(n) + " refused so far)");
}

size_t ucx_node::impl::pending_incoming() const {
  size_t n = 0;
  for (const auto& [ep, st] : by_ep) n += st.incoming && st.stage != hello_stage::done;
  return n;
}

void ucx_node::impl::expire_pending_hellos() {
  const auto now = steady::now();
  std::vector<ucp_ep_h> late;
  for (const auto& [ep, st] : by_ep)
    if (st.incoming && st.stage != hello_stage::done && hello_overdue(liveness, st.liveness, now)) late.push_back(ep);
  for (auto ep : late) refuse(ep, liveness.hello_overdue_reason());
}

// Second connections (proven, held back behind the peer's first) whose first went quiet take
// its place: the first goes down (superseded) and the second comes up.
void ucx_node::impl::supersede_quiet_connections() {
  if (!held_back) return;
  held_back = false;
  const auto now = steady::now();
  std::vector<std::pair<ucp_ep_h, ucp_ep_h>> swaps;  // (quiet first, second)
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [ep, st] : by_ep) {
      if (st.up || st.stage != hello_stage::done || st.name.empty()) continue;
      held_back = true;  // looked at again on the next check until it is up or gone
      const auto first = by_name.find(st.name);
      if (first == by_name.end() || first->second == ep || !up_names[st.name]) continue;
      const auto f = by_ep.find(first->second);
      if (f != by_ep.end() && supersedes_quiet(liveness, f->second.liveness, now)) swaps.emplace_back(first->second, ep);
    }
  }
  for (const auto& [quiet, second] : swaps) {
    auto it = by_ep.find(second);
    if (it == by_ep.end()) continue;
    counters.peers_superseded++;
    mark_down(quiet, "superseded by its new connection");
    MSOMNI_LOG(info, "ucx") << opt.name << ": peer " << it->second.name << " up again on its new connection";
    bring_up(second, it->second);
  }
}

}  // namespace msomni::transport
