// Starts processes that speak the ADDR/PEER/GO start-up protocol (msomni-rank, the transport
// test node): each prints "ADDR <name> <addr>", then every process is told every address
// and "GO". Shared by the multi-process tests.
#pragma once

#include "core/child_process.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace msomni::testing {

inline std::vector<std::unique_ptr<child_process>> start_wired(const std::string& binary,
                                                               const std::vector<std::vector<std::string>>& args) {
  using namespace std::chrono_literals;
  std::vector<std::unique_ptr<child_process>> procs;
  std::vector<std::string> peers;
  for (const auto& a : args) {
    procs.push_back(std::make_unique<child_process>(binary, a));
    auto addr = procs.back()->read_until("ADDR ", 20s);
    REQUIRE_MESSAGE(addr, "process did not start: " << procs.back()->log);
    peers.push_back("PEER" + addr->substr(4));
  }
  for (auto& p : procs) {
    for (const auto& line : peers) p->write_line(line);
    p->write_line("GO");
  }
  return procs;
}

}  // namespace msomni::testing
