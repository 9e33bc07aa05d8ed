// msomni-health-peer: the other process of the pre-flight's UCX loopback check. It listens
// on loopback, prints "ADDR host:port", echoes every eager frame back to its sender, takes
// bulk frames into a buffer and acknowledges each with an eager frame (c = 2), and exits
// when its stdin closes (the checking process ended or is done).
#include "ucx/ucx_node.hpp"

#include <iostream>
#include <mutex>
#include <string>
#include <vector>

using namespace msomni::transport;

int main() {
  std::mutex m;
  std::vector<std::byte> bulk;
  ucx_node* self = nullptr;
  ucx_node_handlers h;
  h.on_frame = [&](const std::string& peer, const frame_header& f, std::span<const std::byte> payload) {
    self->send(peer, f, std::vector<std::byte>(payload.begin(), payload.end()));
  };
  h.on_bulk_buffer = [&](const std::string&, const frame_header& f) -> std::byte* {
    std::lock_guard<std::mutex> lock(m);
    if (bulk.size() < f.payload_size) bulk.resize(f.payload_size);
    return bulk.data();
  };
  h.on_bulk_done = [&](const std::string& peer, const frame_header& f, std::byte*, bool ok) {
    self->send(peer, {frame_kind::actor_message, 0, 0, 0, ok ? 2u : 3u, 0}, {});
  };
  ucx_node_options o;
  o.name = "health-peer";
  ucx_node node(o, h);
  self = &node;
  std::cout << "ADDR " << node.address() << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
  }
  return 0;
}
