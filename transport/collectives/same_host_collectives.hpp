// All-reduce and broadcast among the members of a same_host_group: every byte moves by one
// process_vm_readv out of the owner's buffer, and the members synchronise through their
// control pages. The sum runs in the UCX ring's order, so both paths give the same bits for
// the same members.
#pragma once

#include "collectives/same_host_group.hpp"

#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace msomni::transport {

struct same_host_limits {
  std::chrono::milliseconds timeout;          // for each wait on a peer
  std::function<std::string()> abort_reason;  // non-empty: give up (a peer down, superseded)
};

// Sum in place as operation `seq`. Member r owns chunk r (chunk_of): it adds every other
// member's chunk r into its own, starting with member r+1, then r+2, ... (the ring's order:
// its partial sum of chunk c starts at member c and goes round); then each member copies the
// chunks it does not own from their owners. Throws collective_error.
void same_host_all_reduce(same_host_group& group, uint64_t seq, std::span<float> data, std::vector<float>& scratch,
                          const same_host_limits& limits);

// From `root` to every member, in place, as operation `seq`. Throws collective_error.
void same_host_broadcast(same_host_group& group, uint64_t seq, std::span<std::byte> data, int root,
                         const same_host_limits& limits);

}  // namespace msomni::transport
