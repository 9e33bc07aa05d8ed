// ucx_node's liveness protocol on the progress thread: keep-alives to quiet peers, silent
// peers reported down, and every peer that goes down (error, silence, goodbye, refusal)
// reported exactly once. When a peer is silent or owed a keep-alive is peer_liveness.hpp.
#include "ucx/ucx_node_impl.hpp"

namespace msomni::transport {

using namespace detail;

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
  supersede_quiet_connections();
  const auto now = steady::now();
  if (own_pause(liveness, last_check, now)) {
    MSOMNI_LOG(info, "ucx") << opt.name << ": stood still for "
                            << std::chrono::duration_cast<std::chrono::milliseconds>(now - last_check).count()
                            << " ms; the peers' silence in that time is not counted";
    counters.own_pauses++;
    for (auto& [ep, st] : by_ep) st.liveness.last_heard = excuse_own_pause(liveness, st.liveness.last_heard, last_check, now);
  }
  last_check = now;
  std::vector<ucp_ep_h> silent, due;
  for (auto& [ep, st] : by_ep) {
    if (!st.up) continue;
    switch (liveness_check(liveness, st.liveness, now)) {
      case liveness_due::silent: silent.push_back(ep); break;
      case liveness_due::keepalive: due.push_back(ep); break;
      case liveness_due::nothing: break;
    }
  }
  counters.peers_silent += silent.size();
  for (auto ep : silent) mark_down(ep, liveness.silent_reason());
  for (auto ep : due) {
    auto ctx = std::make_unique<send_ctx>();
    ctx->header = encode_header({frame_kind::keepalive, 0, 0, 0, 0, 0});
    do_send(ep, std::move(ctx), UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER, nullptr, 0);
  }
}

}  // namespace msomni::transport
