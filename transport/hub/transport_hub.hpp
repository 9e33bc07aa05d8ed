// The transport of one process: a ucx_node whose frames are routed to their consumers:
// actor messages to the gateway, collective chunks to the collective mailbox, bulk payloads
// to the bulk receiver registered for their stream, peer up/down and refused peers to every
// listener.
#pragma once

#include "collectives/collective_mailbox.hpp"
#include "ucx/ucx_node.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace msomni::transport {

class transport_hub {
 public:
  using frame_fn = std::function<void(const std::string& peer, const frame_header&, std::span<const std::byte>)>;
  using peer_fn = std::function<void(const std::string& peer, bool up, const std::string& reason)>;
  using refused_fn = std::function<void(const std::string& address, const std::string& reason)>;
  using bulk_buffer_fn = std::function<std::byte*(const std::string& peer, const frame_header&)>;
  using bulk_done_fn = std::function<void(const std::string& peer, const frame_header&, std::byte*, bool)>;

  explicit transport_hub(ucx_node_options options);
  ~transport_hub();

  ucx_node& node() { return *node_; }
  collective_mailbox& mailbox() { return mailbox_; }

  // Consumers register before peers connect. Handlers run on the progress thread.
  void on_actor_frame(frame_fn fn);
  void on_bulk(bulk_buffer_fn buffer, bulk_done_fn done);
  void add_peer_listener(peer_fn fn);
  // A peer that did not authenticate (ucx_node_handlers::on_refused), e.g. for a journal.
  void add_refusal_listener(refused_fn fn);

 private:
  collective_mailbox mailbox_;
  std::mutex mutex_;
  frame_fn actor_frame_;
  bulk_buffer_fn bulk_buffer_;
  bulk_done_fn bulk_done_;
  std::vector<peer_fn> peer_listeners_;
  std::vector<refused_fn> refusal_listeners_;
  std::unique_ptr<ucx_node> node_;
};

}  // namespace msomni::transport
