// msomni_fuzz_frame (see frame_fuzz_entry.hpp).
#include "frame_fuzz_entry.hpp"

#include "frame/frame.hpp"
#include "gateway/gateway.hpp"
#include "messages/catalog.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

namespace {
// Deliberately never destroyed: CAF 0.17's actor_system does not survive static
// destruction order at exit (use-after-free seen under valgrind), and a fuzz process only
// ever needs one.
caf::actor_system& fuzz_system() {
  static caf::actor_system* sys = [] {
    auto* cfg = new caf::actor_system_config;
    msomni::register_catalog(*cfg);
    cfg->set("scheduler.max-threads", 1);
    return new caf::actor_system{*cfg};
  }();
  return *sys;
}
}  // namespace

int msomni_fuzz_frame(const uint8_t* data, size_t size) {
  using namespace msomni::transport;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  decode_error why;
  if (size < frame_header_size) {
    decode_header({bytes, size}, why);
    return 0;
  }
  auto h = decode_header({bytes, frame_header_size}, why);
  if (!h) return 0;
  std::span<const std::byte> payload{bytes + frame_header_size, size - frame_header_size};
  if (h->payload_size != payload.size()) return 0;  // the node drops size mismatches
  if (h->kind != frame_kind::actor_message) return 0;
  return gateway_would_accept(fuzz_system(), payload) ? 1 : 0;
}
