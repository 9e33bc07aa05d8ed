// Scheduler policy core, memory half: a host's memory forecast (job_memory_report, through
// scheduler_core::report_memory) decides where guests may go and evicts those it no longer
// leaves room for; a guest's own forecast raises what it needs.
#include "scheduler_core.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace msomni::sched;

namespace {

constexpr uint64_t GB = 1'000'000'000;

// 16 GPUs; crit holds 8 of them and a best-effort filler the other 8, so guests only go to crit.
scheduler_core host_and_filler() {
  scheduler_params prm;
  prm.policy = policy_kind::omni;
  prm.critical_peak_memory_s = 0;
  scheduler_core s(topology::uniform(16, 4, 2), prm);
  s.submit({"crit", job_class::critical, 8}, 0);
  s.submit({"fill", job_class::best_effort, 8}, 1);
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  return s;
}

job_request guest(std::string id, uint32_t gpus, uint64_t memory_bytes) {
  job_request r{std::move(id), job_class::best_effort, gpus};
  r.memory_bytes = memory_bytes;
  return r;
}

const command* find_cmd(const std::vector<command>& cs, command_kind k, const std::string& job) {
  for (const auto& c : cs)
    if (c.kind == k && c.job == job) return &c;
  return nullptr;
}

size_t evictions(const scheduler_core& s, eviction_cause c) { return s.guest_evictions()[static_cast<size_t>(c)]; }

}  // namespace

TEST_CASE("a guest is placed only where the host's memory forecast leaves what it declared") {
  auto s = host_and_filler();
  std::vector<command> out;
  REQUIRE(s.report_memory("crit", 60 * GB, 80 * GB, 10, out));  // 20 GB of the device left
  CHECK(out.empty());
  s.submit(guest("big", 2, 30 * GB), 20);
  s.submit(guest("small", 2, 15 * GB), 21);
  const auto cs = s.window(60);
  // big is skipped and says why (a hold, in the decision log); small behind it fits.
  const command* hold = find_cmd(cs, command_kind::hold, "big");
  REQUIRE(hold);
  CHECK(hold->reason ==
        "not placed as a guest: memory: crit's memory forecast leaves 20.00 GB of its 80.00 GB device; it needs "
        "30.00 GB as a guest");
  CHECK_FALSE(find_cmd(cs, command_kind::colocate, "big"));
  const command* small = find_cmd(cs, command_kind::colocate, "small");
  REQUIRE(small);
  CHECK(small->reason.find("; memory: the host's forecast leaves 20.00 GB of its 80.00 GB device, the guest needs "
                           "15.00 GB") != std::string::npos);
  CHECK(s.memory_skips() == 1);
  CHECK(s.hold_of(*s.find("big")).reason == hold_reason::memory);
  bool logged = false;
  for (const auto& d : s.log()) logged |= d.cmd.kind == command_kind::hold && d.cmd.job == "big";
  CHECK(logged);
  // The next window skips it again, counted, but the hold is not logged twice for the same host.
  const auto again = s.window(120);
  CHECK_FALSE(find_cmd(again, command_kind::hold, "big"));
  CHECK_FALSE(find_cmd(again, command_kind::colocate, "big"));
  CHECK(s.memory_skips() == 2);
}

TEST_CASE("a host whose forecast passes its device takes no guest, not even one that declared nothing") {
  auto s = host_and_filler();
  std::vector<command> out;
  s.report_memory("crit", 82 * GB, 80 * GB, 10, out);
  s.submit(guest("undeclared", 1, 0), 20);
  const auto cs = s.window(60);
  CHECK_FALSE(find_cmd(cs, command_kind::colocate, "undeclared"));
  const command* hold = find_cmd(cs, command_kind::hold, "undeclared");
  REQUIRE(hold);
  CHECK(hold->reason.find("leaves -2.00 GB of its 80.00 GB device") != std::string::npos);
}

TEST_CASE("without a memory forecast of the host guests are placed by the idle share alone") {
  auto s = host_and_filler();
  s.submit(guest("big", 2, 300 * GB), 20);
  const auto cs = s.window(60);
  const command* c = find_cmd(cs, command_kind::colocate, "big");
  REQUIRE(c);
  CHECK(c->reason.rfind("host's predicted idle share passes the threshold: idle share 0.45 ", 0) == 0);
  CHECK(c->reason.find("memory") == std::string::npos);
  // A device without a forecast (or a forecast without a device) is no forecast either.
  std::vector<command> out;
  s.report_memory("crit", 0, 80 * GB, 70, out);
  CHECK(out.empty());
  CHECK(s.find("big")->phase == job_phase::guest);
}

TEST_CASE("a host's new forecast evicts, gracefully and at once, the guests it no longer leaves room for") {
  auto s = host_and_filler();
  std::vector<command> out;
  s.report_memory("crit", 40 * GB, 80 * GB, 10, out);
  s.submit(guest("g30", 2, 30 * GB), 20);
  s.submit(guest("g10", 2, 10 * GB), 21);
  const auto placed = s.window(60);
  REQUIRE(find_cmd(placed, command_kind::colocate, "g30"));
  REQUIRE(find_cmd(placed, command_kind::colocate, "g10"));
  // The forecast grows to 55 GB: 25 GB left. g30 goes (the evict path: checkpoint, requeue); g10 stays.
  out.clear();
  REQUIRE(s.report_memory("crit", 55 * GB, 80 * GB, 90, out));
  const command* ev = find_cmd(out, command_kind::evict_guest, "g30");
  REQUIRE(ev);
  CHECK(ev->host == "crit");
  CHECK(ev->reason == "memory: crit's memory forecast leaves 25.00 GB of its 80.00 GB device; it needs 30.00 GB as a guest");
  CHECK_FALSE(find_cmd(out, command_kind::evict_guest, "g10"));
  CHECK(s.find("g30")->phase == job_phase::pending);
  CHECK(s.find("g10")->phase == job_phase::guest);
  CHECK(evictions(s, eviction_cause::memory) == 1);
  bool logged = false;
  for (const auto& d : s.log()) logged |= d.cmd.kind == command_kind::evict_guest && d.cmd.job == "g30";
  CHECK(logged);
  // Past the device: every guest goes.
  out.clear();
  s.report_memory("crit", 81 * GB, 80 * GB, 95, out);
  CHECK(find_cmd(out, command_kind::evict_guest, "g10"));
  CHECK(evictions(s, eviction_cause::memory) == 2);
  CHECK(s.counts().guests == 0);
  // The same report again changes nothing.
  out.clear();
  s.report_memory("crit", 81 * GB, 80 * GB, 96, out);
  CHECK(out.empty());
  // The forecast falls back: at the next window they are placed again.
  s.report_memory("crit", 30 * GB, 80 * GB, 100, out);
  const auto back = s.window(120);
  CHECK(find_cmd(back, command_kind::colocate, "g30"));
  CHECK(find_cmd(back, command_kind::colocate, "g10"));
}

TEST_CASE("a guest's own forecast raises its need: past the host's headroom it is evicted and not placed again") {
  auto s = host_and_filler();
  std::vector<command> out;
  s.report_memory("crit", 50 * GB, 80 * GB, 10, out);
  s.submit(guest("g", 2, 10 * GB), 20);
  REQUIRE(find_cmd(s.window(60), command_kind::colocate, "g"));
  // It runs and forecasts 20 GB: still within the 30 GB left.
  s.report_memory("g", 20 * GB, 80 * GB, 70, out);
  CHECK(out.empty());
  CHECK(memory_need(*s.find("g")) == 20 * GB);
  // Then 35 GB: evicted.
  s.report_memory("g", 35 * GB, 80 * GB, 80, out);
  const command* ev = find_cmd(out, command_kind::evict_guest, "g");
  REQUIRE(ev);
  CHECK(ev->reason.find("it needs 35.00 GB as a guest") != std::string::npos);
  // Waiting, it keeps that need: the next window leaves it in the queue.
  CHECK(memory_need(*s.find("g")) == 35 * GB);
  const auto cs = s.window(120);
  CHECK_FALSE(find_cmd(cs, command_kind::colocate, "g"));
  CHECK(find_cmd(cs, command_kind::hold, "g"));
}

TEST_CASE("memory reports of unknown jobs are refused and evictions are counted by cause") {
  auto s = host_and_filler();
  std::vector<command> out;
  CHECK_FALSE(s.report_memory("nobody", 10 * GB, 80 * GB, 1, out));
  CHECK(out.empty());
  s.submit(guest("g", 1, 0), 20);
  REQUIRE(find_cmd(s.window(60), command_kind::colocate, "g"));
  s.set_forecast("crit", {0.1, 0.05, 0.1, 1.0});  // lends nothing any more
  CHECK(find_cmd(s.window(120), command_kind::evict_guest, "g"));
  CHECK(evictions(s, eviction_cause::lending) == 1);
  CHECK(evictions(s, eviction_cause::memory) == 0);
  s.set_forecast("crit", {0.45, 0.38, 0.5, 1.0});
  REQUIRE(find_cmd(s.window(180), command_kind::colocate, "g"));
  CHECK(find_cmd(s.finished("crit", 200), command_kind::evict_guest, "g"));
  CHECK(evictions(s, eviction_cause::host_ended) == 1);
}
