// The pure policy core: classification, retention with references, temp cleanup, load
// order and the coordinator's commit tracker (idempotent reports).
#include "checkpoint_policy.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace msomni::ckpt;

namespace {

bool removes(const cleanup_plan& p, const std::string& name) {
  return std::find(p.remove.begin(), p.remove.end(), name) != p.remove.end();
}

checkpoint_status good(uint64_t step, std::set<uint64_t> refs = {}) {
  return {step, true, std::move(refs), {}};
}

}  // namespace

TEST_CASE("entries are classified by name") {
  CHECK(classify_entry({"step-00000010", true}).cls == entry_class::checkpoint);
  CHECK(classify_entry({"step-00000010", true}).step == 10);
  CHECK(classify_entry({"step-00000010", false}).cls == entry_class::other);
  CHECK(classify_entry({".tmp-step-00000010-e1", true}).cls == entry_class::temporary);
  CHECK(classify_entry({".tmp-latest-12-3", false}).cls == entry_class::temporary);
  CHECK(classify_entry({".trash-step-00000010", true}).cls == entry_class::temporary);
  CHECK(classify_entry({"latest", false}).cls == entry_class::latest_pointer);
  CHECK(classify_entry({"notes.txt", false}).cls == entry_class::other);
  CHECK(staging_dir_name(10, 3) == ".tmp-step-00000010-e3");
}

TEST_CASE("retention keeps the newest N and removes older ones and all temporaries") {
  const std::vector<root_entry> ls = {{"step-00000010", true}, {"step-00000020", true},
                                      {"step-00000030", true}, {"step-00000040", true},
                                      {".tmp-step-00000050-e1", true}, {".tmp-latest-1-2", false},
                                      {"latest", false}, {"README", false}};
  const auto plan = plan_cleanup(ls, {good(10), good(20), good(30), good(40)}, 2, {});
  CHECK(removes(plan, "step-00000010"));
  CHECK(removes(plan, "step-00000020"));
  CHECK_FALSE(removes(plan, "step-00000030"));
  CHECK_FALSE(removes(plan, "step-00000040"));
  CHECK(removes(plan, ".tmp-step-00000050-e1"));
  CHECK(removes(plan, ".tmp-latest-1-2"));
  CHECK_FALSE(removes(plan, "latest"));
  CHECK_FALSE(removes(plan, "README"));
  CHECK(plan.remove.size() == plan.reasons.size());
}

TEST_CASE("a staging directory in flight survives cleanup") {
  const std::vector<root_entry> ls = {{".tmp-step-00000050-e1", true}, {".tmp-step-00000040-e1", true}};
  const auto plan = plan_cleanup(ls, {}, 3, {".tmp-step-00000050-e1"});
  CHECK_FALSE(removes(plan, ".tmp-step-00000050-e1"));
  CHECK(removes(plan, ".tmp-step-00000040-e1"));
}

TEST_CASE("bases referenced by kept incremental checkpoints are kept") {
  const std::vector<root_entry> ls = {{"step-00000010", true}, {"step-00000020", true},
                                      {"step-00000030", true}};
  const auto plan = plan_cleanup(ls, {good(10), good(20), good(30, {10})}, 1, {});
  CHECK_FALSE(removes(plan, "step-00000030"));
  CHECK_FALSE(removes(plan, "step-00000010"));
  CHECK(removes(plan, "step-00000020"));
}

TEST_CASE("bad checkpoints do not count toward keep - old bad ones go - newer ones stay") {
  const std::vector<root_entry> ls = {{"step-00000010", true}, {"step-00000020", true},
                                      {"step-00000030", true}, {"step-00000040", true}};
  std::vector<checkpoint_status> st = {{10, false, {}, "torn"}, good(20), good(30),
                                       {40, false, {}, "checksum"}};
  const auto plan = plan_cleanup(ls, st, 2, {});
  CHECK_FALSE(removes(plan, "step-00000020"));
  CHECK_FALSE(removes(plan, "step-00000030"));
  CHECK_FALSE(removes(plan, "step-00000040"));
  CHECK(removes(plan, "step-00000010"));
}

TEST_CASE("keep = 0 is treated as 1: retention never removes the only good checkpoint") {
  const auto plan = plan_cleanup({{"step-00000010", true}}, {good(10)}, 0, {});
  CHECK(plan.remove.empty());
}

TEST_CASE("load order is newest first and ignores everything but committed directories") {
  const std::vector<root_entry> ls = {{"step-00000020", true}, {"step-00000100", true},
                                      {".tmp-step-00000200-e1", true}, {"step-00000003", true},
                                      {"step-00000050", false}};
  CHECK(load_order(ls) == std::vector<uint64_t>{100, 20, 3});
}

TEST_CASE("commit tracker: ready when every rank reported - duplicates are harmless") {
  commit_tracker t({10, 40, 2, 7, 1}, {0, 1});
  shard_report r0{0, true, {0, 100, 0xaa, 400, 5, "step-00000010"}, {}};
  shard_report r1{1, true, {1, 120, 0xbb, 400, 5, "step-00000010"}, {}};
  CHECK(t.on_report(r1) == commit_tracker::state::collecting);
  CHECK(t.on_report(r1) == commit_tracker::state::collecting);  // delivered twice
  CHECK(t.on_report(r0) == commit_tracker::state::ready);
  CHECK(t.on_report(r0) == commit_tracker::state::ready);
  const auto recs = t.records();
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].rank == 0);
  CHECK(recs[1].xxh3 == 0xbb);
}

TEST_CASE("commit tracker fails on a failed rank - a stranger - or contradicting reports") {
  {
    commit_tracker t({10, 40, 2, 7, 1}, {0, 1});
    CHECK(t.on_report({1, false, {}, "write /x: No space left on device"}) ==
          commit_tracker::state::failed);
    CHECK(t.failure().find("No space left") != std::string::npos);
  }
  {
    commit_tracker t({10, 40, 2, 7, 1}, {0, 1});
    CHECK(t.on_report({5, true, {}, {}}) == commit_tracker::state::failed);
  }
  {
    commit_tracker t({10, 40, 2, 7, 1}, {0, 1});
    t.on_report({0, true, {0, 100, 0xaa, 400, 5, "step-00000010"}, {}});
    CHECK(t.on_report({0, true, {0, 100, 0xab, 400, 5, "step-00000010"}, {}}) ==
          commit_tracker::state::failed);
  }
}
