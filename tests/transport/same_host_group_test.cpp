// The same-host collectives without UCX: members are threads of this process, each with its
// own group (control page and areas), attached to each other the way separate processes do
// (through /proc/self/fd and process_vm_readv of this very process).
#include "collectives/communicator.hpp"
#include "collectives/same_host_collectives.hpp"
#include "collectives/same_host_group.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace msomni::transport;
using namespace std::chrono_literals;

namespace {

struct members {
  std::vector<std::unique_ptr<same_host_group>> groups;
  std::vector<host_identity> ids;

  explicit members(int n) {
    for (int i = 0; i < n; ++i) {
      groups.push_back(std::make_unique<same_host_group>());
      const auto& g = *groups.back();
      ids.push_back(this_process_identity(g.page_fd(), g.page_token(), g.token_address()));
    }
  }
  std::string attach_all() {
    for (size_t i = 0; i < groups.size(); ++i)
      if (auto why = groups[i]->attach(ids, int(i)); !why.empty()) return why;
    return {};
  }
};

const same_host_limits limits{10s, [] { return std::string(); }};

}  // namespace

TEST_CASE("members attach when every page and token checks out, and say why not otherwise") {
  SUBCASE("all good") {
    members m(3);
    REQUIRE(share_one_host(m.ids));
    CHECK(m.attach_all() == "");
  }
  SUBCASE("a record with another token") {
    members m(2);
    m.ids[1].page_token ^= 1;
    CHECK(m.groups[0]->attach(m.ids, 0).find("control page has another token") != std::string::npos);
  }
  SUBCASE("a record whose token address points elsewhere") {
    members m(2);
    static const uint64_t elsewhere = 7;
    m.ids[1].token_address = reinterpret_cast<uintptr_t>(&elsewhere);
    CHECK(m.groups[0]->attach(m.ids, 0).find("memory holds another token") != std::string::npos);
  }
  SUBCASE("a descriptor that is not there") {
    members m(2);
    m.ids[1].page_fd = 1 << 20;
    CHECK(m.groups[0]->attach(m.ids, 0).find("cannot open member 1's control page") != std::string::npos);
  }
}

TEST_CASE("three members all-reduce and broadcast in any mix of sizes, exactly, whichever runs ahead") {
  members m(3);
  REQUIRE(m.attach_all() == "");
  // Sizes on both sides of the one-synchronisation limit and past one 4 MiB slice.
  const std::vector<size_t> sizes = {1, 5, 1000, 40000, 70000, (size_t{1} << 20) + 5};
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      try {
        auto& g = *m.groups[size_t(r)];
        for (int round = 0; round < 20; ++round) {
          for (size_t n : sizes) {
            std::vector<float> v(n);
            for (size_t i = 0; i < n; ++i) v[i] = float((i * 7 + size_t(r) * 3 + size_t(round)) % 101);
            same_host_all_reduce(g, v, limits);
            for (size_t i = 0; i < n; ++i) {
              float want = 0;
              for (int q = 0; q < 3; ++q) want += float((i * 7 + size_t(q) * 3 + size_t(round)) % 101);
              if (v[i] != want) throw std::runtime_error("size " + std::to_string(n) + " element " + std::to_string(i));
            }
          }
          // A broadcast from every member in turn (as a checkpoint commit does), then the next
          // round's small all-reduce: no member may run two steps ahead of another.
          for (int root = 0; root < 3; ++root) {
            std::vector<uint64_t> b(7, r == root ? uint64_t(round * 10 + root) : 0);
            same_host_broadcast(g, std::as_writable_bytes(std::span(b)), root, limits);
            for (auto x : b)
              if (x != uint64_t(round * 10 + root)) throw std::runtime_error("broadcast of round " + std::to_string(round));
          }
        }
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) CHECK(e == "");
  for (const auto& g : m.groups) {
    CHECK(g->shared_bytes() > 4096);
    CHECK(g->shared_bytes() <= 4096 + (10 << 20));
  }
}

TEST_CASE("a member that gives up makes the wait throw instead of hanging") {
  members m(2);
  REQUIRE(m.attach_all() == "");
  std::vector<float> v(100, 1.0f);
  const same_host_limits stop{10s, [] { return std::string("peer gone (test)"); }};
  // Member 1 never enters: member 0's wait asks abort_reason and throws it.
  CHECK_THROWS_WITH_AS(same_host_all_reduce(*m.groups[0], v, stop), doctest::Contains("peer gone (test)"),
                       collective_error);
  const same_host_limits short_deadline{50ms, [] { return std::string(); }};
  CHECK_THROWS_WITH_AS(same_host_all_reduce(*m.groups[0], v, short_deadline), doctest::Contains("timed out"),
                       collective_error);
}
