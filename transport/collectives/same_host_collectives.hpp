// All-reduce and broadcast among the members of a same_host_group: bytes move through
// shared memory (or one process_vm_readv), and the members synchronise through their
// control pages. The sum runs in the UCX ring's order, so both paths give the same bits for
// the same members.
//
// Steps: every synchronised unit of work has a number, the same on every member. A member
// finishes a step only once every member has entered it, so no member is ever more than one
// step ahead of another: what a step shares (its address and length, an area of its parity)
// is reused two steps later at the earliest, when every member is done with it.
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

// Sum in place. The buffer goes in slices; for each, every member copies the shares it does
// not sum into its shared input area, member r sums share r of the slice into its reduced
// area reading the others' input areas, and every member copies each share from its owner's
// reduced area. Each element is summed in the UCX ring's order for the ring chunk (of the
// whole buffer) it lies in: starting at member c for chunk c and going round.
// Two synchronisations per slice: all entered, each owner reduced; nobody waits for the
// others to finish reading (they have, before anyone's next step gets past 'entered').
// Throws collective_error.
void same_host_all_reduce(same_host_group& group, std::span<float> data, const same_host_limits& limits);

// From `root` to every member, in place: each reads the root's buffer with one
// process_vm_readv; the root returns when all have. Throws collective_error.
void same_host_broadcast(same_host_group& group, std::span<std::byte> data, int root, const same_host_limits& limits);

}  // namespace msomni::transport
