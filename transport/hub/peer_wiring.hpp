// The ADDR/PEER/GO wiring of processes a test or benchmark driver starts side by side (the
// standalone msomni-rank, the transport benches): each prints "ADDR <name> <address>", reads
// "PEER <name> <address>" lines up to "GO", connects to the peers whose names sort before its
// own and waits for every peer to be up.
#pragma once

#include "hub/transport_hub.hpp"

#include <chrono>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

namespace msomni::transport {

// Every member's name (this one's too), sorted: the ring order. Throws std::runtime_error
// naming a peer that is not up within `wait`.
std::vector<std::string> wire_peers(transport_hub& hub, const std::string& name, std::chrono::seconds wait,
                                    std::istream& in, std::ostream& out);

}  // namespace msomni::transport
