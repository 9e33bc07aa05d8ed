// wire_peers (see peer_wiring.hpp).
#include "hub/peer_wiring.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace msomni::transport {

std::vector<std::string> wire_peers(transport_hub& hub, const std::string& name, std::chrono::seconds wait,
                                    std::istream& in, std::ostream& out) {
  out << "ADDR " << name << " " << hub.node().address() << std::endl;
  std::vector<std::string> members{name};
  std::vector<std::pair<std::string, std::string>> peers;
  for (std::string line; std::getline(in, line) && line != "GO";) {
    std::istringstream fields(line);
    std::string tag, peer, address;
    fields >> tag >> peer >> address;
    if (tag == "PEER" && peer != name) peers.emplace_back(peer, address), members.push_back(peer);
  }
  for (auto& [peer, address] : peers)
    if (peer < name) hub.node().connect(address);
  for (auto& [peer, address] : peers)
    if (!hub.node().wait_up(peer, wait)) throw std::runtime_error("peer " + peer + " never came up");
  std::sort(members.begin(), members.end());
  return members;
}

}  // namespace msomni::transport
