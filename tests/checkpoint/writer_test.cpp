// The asynchronous per-rank writer: saves happen off the caller's thread, a second request
// while one is in flight is refused and counted, the caller's blocked time is measured, and
// a coordinator commits from the writers' outcomes (as the orchestrator will).
#include "checkpoint_writer.hpp"
#include "crash_support.hpp"

#include <future>

using namespace msomni::ckpt;
using namespace msomni::ckpt::testing;

namespace {

// A gate the writer's completion callback waits on: keeps a save "in flight" for as long
// as the test wants, without sleeping or timing anything.
struct gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard lk(mu);
      open = true;
    }
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("one save in flight per rank: a second request is refused and counted") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path());
  gate g;
  std::vector<save_outcome> outcomes;
  std::mutex mu;
  int64_t fake_now = 0;
  checkpoint_writer w(
      store, 0,
      [&](const save_outcome& o) {
        g.wait();
        std::lock_guard lk(mu);
        outcomes.push_back(o);
      },
      [&] { return fake_now += 1000; });  // every clock read advances 1 us
  const auto live = make_state(crash_seed, 5, 0, 4096);
  CHECK(w.submit_copy(make_meta(5, 1), live) == checkpoint_writer::submit_result::accepted);
  CHECK(w.busy());
  CHECK(w.submit_copy(make_meta(6, 1), live) == checkpoint_writer::submit_result::refused_busy);
  CHECK(w.submit(make_meta(6, 1), make_state(crash_seed, 6, 0)) ==
        checkpoint_writer::submit_result::refused_busy);
  g.release();
  w.wait_idle();
  const auto m = w.metrics();
  CHECK(m.accepted == 1);
  CHECK(m.refused_busy == 2);
  CHECK(m.completed == 1);
  CHECK(m.failed == 0);
  CHECK(m.blocked_ns_last == 1000);  // exactly one clock tick between the two reads
  CHECK(m.blocked_ns_total == 1000);
  REQUIRE(outcomes.size() == 1);
  CHECK(outcomes[0].ok);
  CHECK(outcomes[0].record.bytes == m.bytes_last);
  // Not committed yet: the coordinator has not seen all shards.
  CHECK(load_order(store.list()).empty());
  store.commit(make_meta(5, 1), {outcomes[0].record});
  CHECK(store.load(5).ranks[0] == live);
}

TEST_CASE("the caller's state may change right after submit_copy returns") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path());
  gate g;
  save_outcome got;
  checkpoint_writer w(store, 0, [&](const save_outcome& o) {
    g.wait();
    got = o;
  });
  auto live = make_state(crash_seed, 7, 0, 2048);
  const auto snapshot = live;
  REQUIRE(w.submit_copy(make_meta(7, 1), live) == checkpoint_writer::submit_result::accepted);
  for (auto& t : live.tensors)  // training continues and overwrites its weights
    for (auto& v : t.values) v += 1.0f;
  g.release();
  w.wait_idle();
  REQUIRE(got.ok);
  store.commit(make_meta(7, 1), {got.record});
  CHECK(store.load(7).ranks[0] == snapshot);
}

TEST_CASE("writers of several ranks feed a commit tracker - buffers are reused across saves") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path());
  constexpr uint32_t world = 3;
  std::mutex mu;
  std::vector<save_outcome> outcomes;
  std::vector<std::unique_ptr<checkpoint_writer>> writers;
  for (uint32_t r = 0; r < world; ++r)
    writers.push_back(std::make_unique<checkpoint_writer>(store, r, [&](const save_outcome& o) {
      std::lock_guard lk(mu);
      outcomes.push_back(o);
    }));
  for (uint64_t step = 1; step <= 3; ++step) {
    outcomes.clear();
    const auto meta = make_meta(step, world);
    for (uint32_t r = 0; r < world; ++r)
      REQUIRE(writers[r]->submit_copy(meta, make_state(crash_seed, step, r)) ==
              checkpoint_writer::submit_result::accepted);
    for (auto& w : writers) w->wait_idle();
    commit_tracker t(meta, {0, 1, 2});
    for (const auto& o : outcomes) t.on_report({o.rank, o.ok, o.record, o.error});
    REQUIRE(t.current() == commit_tracker::state::ready);
    store.commit(meta, t.records());
  }
  const auto res = store.load_latest();
  REQUIRE(res.checkpoint);
  for (uint32_t r = 0; r < world; ++r) CHECK(res.checkpoint->ranks[r] == make_state(crash_seed, 3, r));
  for (auto& w : writers) CHECK(w->metrics().completed == 3);
}

TEST_CASE("a failing save is reported with where and why - and the writer stays usable") {
  msomni::testing::temp_dir tmp;
  io_fault_plan faults;
  checkpoint_store store(tmp.path(), {3, {}, &faults});
  save_outcome got;
  checkpoint_writer w(store, 0, [&](const save_outcome& o) { got = o; });
  faults.bytes_until_fail = 100;
  REQUIRE(w.submit_copy(make_meta(1, 1), make_state(crash_seed, 1, 0)) ==
          checkpoint_writer::submit_result::accepted);
  w.wait_idle();
  CHECK_FALSE(got.ok);
  CHECK(got.sys_errno == ENOSPC);
  CHECK(got.error.find("No space left on device") != std::string::npos);
  CHECK(got.error.find(".tmp-step-00000001-e1") != std::string::npos);
  CHECK(w.metrics().failed == 1);
  faults.bytes_until_fail = -1;
  REQUIRE(w.submit_copy(make_meta(1, 1), make_state(crash_seed, 1, 0)) ==
          checkpoint_writer::submit_result::accepted);
  w.wait_idle();
  CHECK(got.ok);
}
