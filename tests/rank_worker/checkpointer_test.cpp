// The rank side of checkpointing over a communicator of one rank, on real files: a save is
// committed at the first step after its shard is on disk (not at the next interval); a save
// that hits ENOSPC (injected) removes its own staging directory, keeps the last good
// checkpoint, says why, and the next interval's save commits; max_consecutive_failures
// failed saves in a row end with checkpoint_give_up naming the cause, and a success between
// failures resets the count.
#include "checkpoint_store.hpp"
#include "rank_checkpointer.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <thread>

using namespace msomni;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// One rank: collectives are identities, but they are counted.
class solo_communicator final : public transport::communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  uint64_t epoch() const override { return 1; }
  const char* backend() const override { return "solo"; }
  void all_reduce(std::span<float>, transport::reduce_op) override { ++all_reduces; }
  void broadcast(std::span<std::byte>, int) override {}
  uint64_t all_reduces = 0;
};

model::model_state state_at(uint64_t step) {
  model::model_state s;
  s.tensors.push_back({"param/w", {64, 16}, std::vector<float>(1024, static_cast<float>(step))});
  s.blobs.push_back({"trainer/step", std::vector<uint8_t>(8, static_cast<uint8_t>(step))});
  return s;
}

struct solo_job {
  msomni::testing::temp_dir dir;
  ckpt::io_fault_plan faults;
  solo_communicator comm;
  std::vector<msg::checkpoint_done> reports;
  rank_worker::rank_checkpointer ckpts;
  uint64_t step = 0;

  explicit solo_job(uint64_t interval, uint64_t max_failures = 3)
      : ckpts(rank_worker::checkpointing_settings{dir.path().string(), interval, 3, 1, 0, 0x5eed,
                                                  [this](const msg::checkpoint_done& d) { reports.push_back(d); },
                                                  max_failures, &faults, {}},
              0) {}

  // One training step of `step_ms`, then the checkpoint call, as a rank does it.
  void train_to(uint64_t last, std::chrono::milliseconds step_ms = 5ms) {
    while (step < last) {
      std::this_thread::sleep_for(step_ms);
      ++step;
      ckpts.after_step(step, [s = step] { return state_at(s); }, comm, false);
    }
  }
  std::optional<uint64_t> latest() const { return ckpt::latest_step(dir.path()); }
  bool staging_left() const {
    for (const auto& e : fs::directory_iterator(dir.path()))
      if (e.path().filename().string().rfind(".tmp-step-", 0) == 0) return true;
    return false;
  }
};

}  // namespace

TEST_CASE("a save is committed at the first step after its shard is durable, not at the next interval") {
  solo_job j(50);
  j.train_to(50);
  CHECK(j.ckpts.save_pending());
  CHECK_FALSE(j.latest());
  // A step takes 20 ms here and a 4 KiB shard is on disk in far less: the ranks learn so
  // within a few steps and commit then, 40+ steps before the next boundary.
  j.train_to(60, 20ms);
  CHECK(j.latest() == 50);
  CHECK_FALSE(j.ckpts.save_pending());
  const auto d = j.ckpts.take_decided();
  REQUIRE(d);
  CHECK(d->committed);
  CHECK(d->step == 50);
  CHECK(d->decided_after_step > 50);
  CHECK(d->decided_after_step <= 60);
  CHECK(d->request_to_commit_ns > 0);
  CHECK(d->request_to_commit_ns >= d->write_ns);
  MESSAGE("step 50 committed after step " << d->decided_after_step << ", " << d->request_to_commit_ns / 1e6
                                          << " ms after the request (shard written in " << d->write_ns / 1e6 << " ms)");
  CHECK(j.comm.all_reduces >= 1);
  // No save in flight: no collective per step.
  const auto polls = j.comm.all_reduces;
  j.train_to(70);
  CHECK(j.comm.all_reduces == polls);
  REQUIRE(j.reports.size() == 1);
  CHECK(j.reports[0].ok);
}

TEST_CASE("a save that hits ENOSPC removes its own staging directory and the next interval's save commits") {
  solo_job j(10);
  j.train_to(10);
  j.ckpts.finish(j.comm);
  REQUIRE(j.latest() == 10);
  j.faults.bytes_until_fail = 100;  // the next shard fails inside its first write
  j.train_to(20);
  j.ckpts.finish(j.comm);
  const auto d = j.ckpts.take_decided();
  REQUIRE(d);
  CHECK_FALSE(d->committed);
  CHECK(d->error.find("No space left on device") != std::string::npos);
  CHECK_FALSE(j.staging_left());
  CHECK(j.latest() == 10);
  CHECK(j.ckpts.failures_in_a_row() == 1);
  REQUIRE(j.reports.size() == 2);
  CHECK_FALSE(j.reports[1].ok);
  CHECK(j.reports[1].step == 20);
  CHECK(j.reports[1].error.find("No space left on device") != std::string::npos);
  j.faults.bytes_until_fail = -1;  // space is back
  j.train_to(30);
  j.ckpts.finish(j.comm);
  CHECK(j.latest() == 30);
  CHECK(j.ckpts.failures_in_a_row() == 0);
  CHECK_FALSE(j.staging_left());
}

TEST_CASE("max_consecutive_failures failed saves in a row end with the cause and a success in between resets the count") {
  solo_job j(10, 3);
  j.faults.bytes_until_fail = 0;
  j.train_to(20);  // saves 10 fails (decided when 20 is due)
  j.ckpts.finish(j.comm);  // 20 fails
  CHECK(j.ckpts.failures_in_a_row() == 2);
  j.faults.bytes_until_fail = -1;
  j.train_to(30);
  j.ckpts.finish(j.comm);
  CHECK(j.latest() == 30);
  CHECK(j.ckpts.failures_in_a_row() == 0);
  j.faults.bytes_until_fail = 0;
  j.train_to(50);
  j.ckpts.finish(j.comm);
  CHECK(j.ckpts.failures_in_a_row() == 2);
  std::string why;
  try {
    j.train_to(70, 20ms);  // step 60's save fails too, and that is known within a few steps
    FAIL("no checkpoint_give_up after 3 failed saves in a row");
  } catch (const rank_worker::checkpoint_give_up& e) {
    why = e.what();
  }
  CAPTURE(why);
  CHECK(j.step > 60);
  CHECK(j.step < 70);
  CHECK(why.find("3 checkpoint saves failed in a row") != std::string::npos);
  CHECK(why.find("max_consecutive_failures = 3") != std::string::npos);
  CHECK(why.find("No space left on device") != std::string::npos);
  CHECK(j.latest() == 30);
  CHECK_FALSE(j.staging_left());
}
