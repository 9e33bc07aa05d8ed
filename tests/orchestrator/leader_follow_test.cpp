// Following a job's next leader (core/leader_follow.hpp), as the rank and the agent do: which
// leader control.json names, whether it is news, the retry interval and the follow limit.
#include "core/leader_follow.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace std::chrono_literals;

namespace {

time_point at(std::chrono::milliseconds t) { return time_point{} + t; }

}  // namespace

TEST_CASE("the rank asks whatever leader the file names, the same one again only after the retry interval") {
  leader_follow f({});
  CHECK_FALSE(f.following());
  f.lost({"10.0.0.1:4000", 11}, at(0ms), 60s);
  CHECK(f.following());
  CHECK_FALSE(f.try_now(std::nullopt, false, at(100ms)));            // no file
  CHECK_FALSE(f.try_now(leader_named{"", 0}, false, at(200ms)));      // no leader in it yet
  CHECK(f.try_now(leader_named{"10.0.0.1:4000", 11}, false, at(300ms)));  // the rank asks even the lost one
  CHECK_FALSE(f.try_now(leader_named{"10.0.0.1:4000", 11}, false, at(4000ms)));
  CHECK(f.try_now(leader_named{"10.0.0.2:4000", 12}, false, at(4100ms)));  // another: at once
  CHECK(f.try_now(leader_named{"10.0.0.1:4000", 11}, false, at(4200ms)));  // tried before the other
  CHECK(f.try_now(leader_named{"10.0.0.1:4000", 11}, false, at(9300ms)));  // 5 s later
  f.joined({"10.0.0.1:4000", 11});
  CHECK_FALSE(f.following());
  CHECK_FALSE(f.past_limit(at(100s)));
}

TEST_CASE("the agent follows only another leader, once the lost one's node is gone") {
  leader_follow f({true});
  f.joined({"10.0.0.1:4000", 11});
  f.lost(f.served(), at(0ms), 30s);
  CHECK_FALSE(f.try_now(leader_named{"10.0.0.1:4000", 11}, false, at(100ms)));  // the lost one
  CHECK(f.try_now(leader_named{"10.0.0.1:4000", 12}, false, at(200ms)));        // same address, new pid
  f.lost(f.served(), at(300ms), 30s);
  CHECK_FALSE(f.try_now(leader_named{"10.0.0.2:4000", 0}, true, at(400ms)));  // the lost node still up
  CHECK(f.try_now(leader_named{"10.0.0.2:4000", 0}, false, at(500ms)));
}

TEST_CASE("the follow limit runs from the loss") {
  leader_follow f({});
  f.lost({"a:1", 0}, at(1000ms), 30s);
  CHECK_FALSE(f.past_limit(at(31000ms)));
  CHECK(f.past_limit(at(31001ms)));
  CHECK(f.limit() == 30s);
}
