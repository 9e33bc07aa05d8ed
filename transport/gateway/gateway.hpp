// The gateway carries CAF messages between processes over the transport hub. A remote
// actor is an ordinary caf::actor handle (a proxy): send, request/response and monitor work
// as if it were local. Local actors are published under a name; a remote reference is
// (node, name). Messages keep their sender, so the receiver can reply; they are ordered per
// sender-receiver pair (UCX eager active messages on one endpoint). When a peer process
// dies or goes silent, every proxy of that node is killed with remote_link_unreachable,
// i.e. every actor monitoring one receives a caf::down_msg. Unknown or malformed frames are
// dropped, counted and logged.
#pragma once

#include "hub/transport_hub.hpp"

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/typed_actor.hpp>
#include <caf/fwd.hpp>

#include <atomic>
#include <memory>
#include <string>

namespace msomni::transport {

struct gateway_counters {
  std::atomic<uint64_t> forwarded{0};         // local -> remote messages sent
  std::atomic<uint64_t> delivered{0};         // remote -> local messages delivered
  std::atomic<uint64_t> dropped_malformed{0};  // envelope or CAF payload did not decode
  std::atomic<uint64_t> dropped_unknown{0};    // no such receiver here
  std::atomic<uint64_t> dropped_unsendable{0};  // peer down, queue full, or serializer error
  std::atomic<uint64_t> proxies_killed{0};
  // Requests to a node that went down before it answered: failed at once
  // (request_receiver_down) instead of waiting out their timeout.
  std::atomic<uint64_t> requests_failed{0};
  std::atomic<uint64_t> requests_untracked{0};  // past the bound on tracked requests: they time out
  std::atomic<uint64_t> requests_pending{0};    // tracked now (a gauge)
};

class gateway {
 public:
  gateway(caf::actor_system& sys, transport_hub& hub);
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  // Makes `actor` reachable from other processes as (this node, name). Production actors
  // are published by their typed interface (messages/actor_interfaces.hpp).
  template <class... Sigs>
  void publish(const std::string& name, const caf::typed_actor<Sigs...>& actor) {
    publish_dynamic(name, caf::actor_cast<caf::actor>(actor));
  }
  void unpublish(const std::string& name);

  // A handle to the actor published as `name` on `node` (which must be connected), typed by
  // the interface the caller expects of it: e.g. remote_actor<msg::worker_actor>(rank, "worker").
  template <class Interface>
  Interface remote_actor(const std::string& node, const std::string& name) {
    return caf::actor_cast<Interface>(remote_dynamic(node, name));
  }

  // The same, dynamically typed: for the gateway's own tests and benchmarks, whose actors
  // are not msomni's.
  void publish_dynamic(const std::string& name, caf::actor actor);
  caf::actor remote_dynamic(const std::string& node, const std::string& name);

  const gateway_counters& counters() const;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

// Decodes one actor frame's payload the way the gateway does, without delivering it:
// true when it would be delivered. Used by the fuzz target and the malformed-frame corpus.
bool gateway_would_accept(caf::actor_system& sys, std::span<const std::byte> payload);

}  // namespace msomni::transport
