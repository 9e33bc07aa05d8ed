// Which slot of its node a new rank takes: the lowest index no live rank of the node holds.
// The index is the rank's local index (MSOMNI_NODE_SLOT), which picks its GPU, so a
// replacement reuses the GPU its predecessor freed and no two live ranks share one. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace msomni::agent {

// `held`: live rank name -> its slot. Past the node's slots when every one is held (the
// orchestrator places within slots, so that is a rank that will find no GPU of its own).
inline int64_t lowest_free_slot(const std::map<std::string, int64_t>& held) {
  for (int64_t i = 0;; ++i) {
    bool taken = false;
    for (const auto& [name, slot] : held) taken = taken || slot == i;
    if (!taken) return i;
  }
}

}  // namespace msomni::agent
