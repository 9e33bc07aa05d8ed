// transport_hub: routes ucx_node frames to their consumers (see transport_hub.hpp).
#include "hub/transport_hub.hpp"

namespace msomni::transport {

transport_hub::transport_hub(ucx_node_options options) {
  ucx_node_handlers h;
  h.on_frame = [this](const std::string& peer, const frame_header& hdr, std::span<const std::byte> p) {
    frame_fn fn;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn = actor_frame_;
    }
    if (fn) fn(peer, hdr, p);
  };
  h.on_bulk_buffer = [this](const std::string& peer, const frame_header& hdr) -> std::byte* {
    if (hdr.kind == frame_kind::collective) return mailbox_.buffer_for(peer, hdr);
    std::lock_guard<std::mutex> lock(mutex_);
    return bulk_buffer_ ? bulk_buffer_(peer, hdr) : nullptr;
  };
  h.on_bulk_done = [this](const std::string& peer, const frame_header& hdr, std::byte* buf, bool ok) {
    if (hdr.kind == frame_kind::collective) return mailbox_.on_done(peer, hdr, buf, ok);
    bulk_done_fn fn;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn = bulk_done_;
    }
    if (fn) fn(peer, hdr, buf, ok);
  };
  h.on_peer = [this](const std::string& peer, bool up, const std::string& reason) {
    if (up)
      mailbox_.on_peer_up(peer);
    else
      mailbox_.on_peer_down(peer);
    std::vector<peer_fn> listeners;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      listeners = peer_listeners_;
    }
    for (auto& fn : listeners) fn(peer, up, reason);
  };
  h.on_refused = [this](const std::string& address, const std::string& reason) {
    std::vector<refused_fn> listeners;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      listeners = refusal_listeners_;
    }
    for (auto& fn : listeners) fn(address, reason);
  };
  node_ = std::make_unique<ucx_node>(std::move(options), std::move(h));
}

transport_hub::~transport_hub() { node_.reset(); }

void transport_hub::on_actor_frame(frame_fn fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  actor_frame_ = std::move(fn);
}

void transport_hub::on_bulk(bulk_buffer_fn buffer, bulk_done_fn done) {
  std::lock_guard<std::mutex> lock(mutex_);
  bulk_buffer_ = std::move(buffer);
  bulk_done_ = std::move(done);
}

void transport_hub::add_peer_listener(peer_fn fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  peer_listeners_.push_back(std::move(fn));
}

void transport_hub::add_refusal_listener(refused_fn fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  refusal_listeners_.push_back(std::move(fn));
}

}  // namespace msomni::transport
