// Small probes tests share: how often a text occurs in another, and whether a process has
// ended (gone, or a zombie waiting for whoever inherited it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <fstream>
#include <string>
#include <thread>

namespace msomni::testing {

// Occurrences of `what` in `text`, overlapping ones included.
inline size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// True once `pid` is gone or a zombie, within 10 s.
inline bool ends_within_10s(pid_t pid) {
  for (int i = 0; i < 1000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string field;
    if (!(stat >> field >> field >> field) || field == "Z") return true;  // pid (comm) state
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace msomni::testing
