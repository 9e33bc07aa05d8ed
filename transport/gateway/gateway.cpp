// gateway: CAF proxies over the transport hub (see gateway.hpp).
#include "gateway/gateway.hpp"

#include "core/log.hpp"
#include "core/rng.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_proxy.hpp>
#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/exit_reason.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/make_actor.hpp>
#include <caf/node_id.hpp>

#include <map>
#include <mutex>

namespace msomni::transport {

namespace {

// Proxy ids for named references live far above real actor ids so the two never collide.
constexpr uint64_t named_ref_base = uint64_t{1} << 62;
constexpr size_t max_local_senders = 1 << 16;
// Requests waiting for their remote answer, tracked so that a node going down fails them at
// once; beyond this many, a request is not tracked and times out as its caller asked.
constexpr size_t max_pending_requests = 1 << 14;

caf::node_id node_id_of(const std::string& node) {
  caf::node_id::default_data::host_id_type host{};
  uint64_t h = stable_hash(node);
  for (size_t i = 0; i < host.size(); ++i) {
    host[i] = static_cast<uint8_t>(h >> (8 * (i % 8)));
    if (i % 8 == 7) h = stable_hash(node + std::to_string(i));
  }
  return caf::make_node_id(static_cast<uint32_t>(stable_hash(node) >> 32), host);
}

// Envelope + CAF message; the message must be non-empty and use every byte, so trailing
// garbage or a truncated-to-empty payload is refused rather than half-read.
std::optional<actor_envelope> decode_actor_payload(caf::actor_system& sys,
                                                   std::span<const std::byte> payload, caf::message& out) {
  decode_error why;
  auto env = decode_envelope(payload, why);
  if (!env) return std::nullopt;
  try {
    caf::binary_deserializer source{sys, reinterpret_cast<const char*>(env->message_bytes.data()),
                                    env->message_bytes.size()};
    if (source(out) || source.remaining() != 0 || out.empty()) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return env;
}

}  // namespace

// A remote actor as seen locally: every message enqueued is forwarded by the gateway.
class remote_proxy final : public caf::actor_proxy {
 public:
  remote_proxy(caf::actor_config& cfg, std::weak_ptr<gateway::impl> gw, std::string node)
      : caf::actor_proxy(cfg), gateway_(std::move(gw)), node_(std::move(node)) {}

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit*) override;
  bool add_backlink(caf::abstract_actor*) override { return false; }  // no remote links
  bool remove_backlink(caf::abstract_actor*) override { return false; }
  void kill_proxy(caf::execution_unit* ctx, caf::error reason) override {
    cleanup(std::move(reason), ctx);
  }

 private:
  std::weak_ptr<gateway::impl> gateway_;
  std::string node_;
};

struct gateway::impl : std::enable_shared_from_this<gateway::impl> {
  caf::actor_system& sys;
  transport_hub& hub;
  gateway_counters counters;
  std::mutex mutex;
  std::map<std::string, caf::actor> published;
  std::map<std::pair<std::string, uint64_t>, caf::strong_actor_ptr> proxies;  // (node, aid)
  std::map<uint64_t, std::string> named_refs;                                 // proxy aid -> name
  std::map<std::pair<std::string, std::string>, uint64_t> named_ids;          // (node, name) -> aid
  std::map<uint64_t, caf::weak_actor_ptr> local_senders;                      // aid -> actor
  // (sender aid, request id) -> the node asked and the request's id: answered or failed once.
  struct pending_request {
    std::string node;
    caf::weak_actor_ptr sender;
    caf::message_id mid;
  };
  std::map<std::pair<uint64_t, uint64_t>, pending_request> pending;
  uint64_t next_named = named_ref_base;

  impl(caf::actor_system& s, transport_hub& h) : sys(s), hub(h) {}

  caf::strong_actor_ptr proxy_for(const std::string& node, uint64_t aid) {
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = proxies[{node, aid}];
    if (!slot) {
      caf::actor_config cfg;
      slot = caf::make_actor<remote_proxy, caf::strong_actor_ptr>(
          static_cast<caf::actor_id>(aid), node_id_of(node), &sys, cfg, weak_from_this(), node);
    }
    return slot;
  }

  void remember_sender(const caf::strong_actor_ptr& sender) {
    if (!sender) return;
    std::lock_guard<std::mutex> lock(mutex);
    if (local_senders.size() >= max_local_senders) {
      for (auto it = local_senders.begin(); it != local_senders.end();)
        it = it->second.lock() ? std::next(it) : local_senders.erase(it);
    }
    if (local_senders.size() < max_local_senders) local_senders[sender->id()] = caf::weak_actor_ptr{sender.get()};
  }

  void track_request(const std::string& node, const caf::strong_actor_ptr& sender, caf::message_id mid) {
    std::lock_guard<std::mutex> lock(mutex);
    if (pending.size() >= max_pending_requests)  // requests whose askers are gone need no answer
      for (auto it = pending.begin(); it != pending.end();) it = it->second.sender.lock() ? std::next(it) : pending.erase(it);
    if (pending.size() >= max_pending_requests) {
      counters.requests_untracked++;
      return;
    }
    pending[{sender->id(), mid.request_id().integer_value()}] = {node, caf::weak_actor_ptr{sender.get()}, mid};
    counters.requests_pending = pending.size();
  }

  void answered(uint64_t receiver_aid, caf::message_id mid) {
    if (!mid.is_response()) return;
    std::lock_guard<std::mutex> lock(mutex);
    if (pending.erase({receiver_aid, mid.request_id().integer_value()})) counters.requests_pending = pending.size();
  }

  // Every request still waiting for `node`'s answer gets request_receiver_down now.
  void fail_requests_to(const std::string& node) {
    std::vector<pending_request> failed;
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto it = pending.begin(); it != pending.end();) {
        if (it->second.node == node) {
          failed.push_back(std::move(it->second));
          it = pending.erase(it);
        } else {
          ++it;
        }
      }
      counters.requests_pending = pending.size();
    }
    for (auto& r : failed) {
      auto sender = r.sender.lock();
      if (!sender) continue;
      sender->enqueue(caf::make_mailbox_element(nullptr, r.mid.response_id(), {},
                                                caf::make_message(caf::make_error(caf::sec::request_receiver_down))),
                      nullptr);
      counters.requests_failed++;
    }
  }

  void forward(const std::string& node, uint64_t proxy_aid, caf::mailbox_element& what) {
    std::string receiver_name;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (auto it = named_refs.find(proxy_aid); it != named_refs.end()) receiver_name = it->second;
    }
    remember_sender(what.sender);
    if (what.sender && what.mid.is_request()) track_request(node, what.sender, what.mid);
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto msg = what.move_content_to_message();
    if (auto err = sink(msg)) {
      counters.dropped_unsendable++;
      MSOMNI_LOG(warn, "gateway") << "cannot serialize a message for " << node << ": " << sys.render(err);
      return;
    }
    auto payload = encode_envelope(receiver_name, std::as_bytes(std::span<const char>(buf)));
    frame_header h{frame_kind::actor_message, 0, what.sender ? what.sender->id() : 0,
                   receiver_name.empty() ? proxy_aid : 0, what.mid.integer_value(), 0};
    if (hub.node().send(node, h, std::move(payload)))
      counters.forwarded++;
    else
      counters.dropped_unsendable++;
  }

  void deliver(const std::string& peer, const frame_header& h, std::span<const std::byte> payload) {
    caf::message msg;
    auto env = decode_actor_payload(sys, payload, msg);
    if (!env) {
      counters.dropped_malformed++;
      MSOMNI_LOG(warn, "gateway") << "dropped a malformed message from " << peer;
      return;
    }
    caf::strong_actor_ptr receiver;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!env->receiver_name.empty()) {
        if (auto it = published.find(env->receiver_name); it != published.end())
          receiver = caf::actor_cast<caf::strong_actor_ptr>(it->second);
      } else if (auto it = local_senders.find(h.b); it != local_senders.end()) {
        receiver = it->second.lock();
      }
    }
    if (!receiver) {
      counters.dropped_unknown++;
      MSOMNI_LOG(warn, "gateway") << "dropped a message from " << peer << " for unknown receiver "
                                  << (env->receiver_name.empty() ? std::to_string(h.b) : env->receiver_name);
      return;
    }
    caf::strong_actor_ptr sender = h.a != 0 ? proxy_for(peer, h.a) : nullptr;
    answered(receiver->id(), caf::message_id{h.c});
    receiver->enqueue(caf::make_mailbox_element(std::move(sender), caf::message_id{h.c},
                                                {}, std::move(msg)),
                      nullptr);
    counters.delivered++;
  }

  void peer_down(const std::string& node, const std::string& reason) {
    std::vector<caf::strong_actor_ptr> victims;
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto it = proxies.begin(); it != proxies.end();) {
        if (it->first.first == node) {
          victims.push_back(std::move(it->second));
          it = proxies.erase(it);
        } else {
          ++it;
        }
      }
      for (auto it = named_ids.begin(); it != named_ids.end();)
        it = it->first.first == node ? named_ids.erase(it) : std::next(it);
    }
    fail_requests_to(node);
    // A clean leave ends its actors normally; anything else is remote_link_unreachable.
    const bool clean = reason == peer_left_reason;
    for (auto& p : victims) {
      static_cast<remote_proxy*>(caf::actor_cast<caf::abstract_actor*>(p))
          ->kill_proxy(nullptr, clean ? caf::exit_reason::normal : caf::exit_reason::remote_link_unreachable);
      counters.proxies_killed++;
    }
    if (clean) {
      MSOMNI_LOG(debug, "gateway") << "node " << node << " left: " << victims.size() << " proxies ended";
    } else {
      MSOMNI_LOG(info, "gateway") << "node " << node << " down (" << reason << "): " << victims.size()
                                  << " proxies killed";
    }
  }
};

void remote_proxy::enqueue(caf::mailbox_element_ptr what, caf::execution_unit*) {
  if (auto gw = gateway_.lock()) gw->forward(node_, id(), *what);
}

gateway::gateway(caf::actor_system& sys, transport_hub& hub) : impl_(std::make_shared<impl>(sys, hub)) {
  std::weak_ptr<impl> weak = impl_;
  hub.on_actor_frame([weak](const std::string& peer, const frame_header& h, std::span<const std::byte> p) {
    if (auto self = weak.lock()) self->deliver(peer, h, p);
  });
  hub.add_peer_listener([weak](const std::string& peer, bool up, const std::string& reason) {
    if (auto self = weak.lock(); self && !up) self->peer_down(peer, reason);
  });
}

gateway::~gateway() {
  impl_->hub.on_actor_frame(nullptr);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->published.clear();
  impl_->proxies.clear();
}

void gateway::publish_dynamic(const std::string& name, caf::actor actor) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->published[name] = std::move(actor);
}

void gateway::unpublish(const std::string& name) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->published.erase(name);
}

caf::actor gateway::remote_dynamic(const std::string& node, const std::string& name) {
  if (name.empty() || name.size() > max_actor_name)
    throw std::invalid_argument("remote_actor: name must be 1.." + std::to_string(max_actor_name) + " bytes");
  uint64_t aid;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto [it, fresh] = impl_->named_ids.emplace(std::pair{node, name}, 0);
    if (fresh) {
      it->second = impl_->next_named++;
      impl_->named_refs[it->second] = name;
    }
    aid = it->second;
  }
  auto proxy = impl_->proxy_for(node, aid);
  if (!impl_->hub.node().is_up(node))  // a dead node's handle is born dead: monitors see down
    static_cast<remote_proxy*>(caf::actor_cast<caf::abstract_actor*>(proxy))
        ->kill_proxy(nullptr, caf::exit_reason::remote_link_unreachable);
  return caf::actor_cast<caf::actor>(proxy);
}

const gateway_counters& gateway::counters() const { return impl_->counters; }

bool gateway_would_accept(caf::actor_system& sys, std::span<const std::byte> payload) {
  caf::message msg;
  return decode_actor_payload(sys, payload, msg).has_value();
}

}  // namespace msomni::transport
