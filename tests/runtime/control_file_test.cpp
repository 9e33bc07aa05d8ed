// control.json as ranks, node agents and the CLI read it, and when a run counts as ended under
// the leader that wrote it.
#include "core/control_file.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

using namespace msomni;
namespace fs = std::filesystem;

namespace {

// Sets `file`'s modification time `seconds` from the other file's, so the order does not hang
// on the file system's timestamp granularity.
void touch_relative(const fs::path& file, const fs::path& other, int seconds) {
  fs::last_write_time(file, fs::last_write_time(other) + std::chrono::seconds(seconds));
}

}  // namespace

TEST_CASE("control.json: the address, token, pid, store, job and follow limit, and nothing from a file without them") {
  testing::temp_dir dir;
  const auto file = dir.write(
      "control.json",
      R"({"address":"127.0.0.1:5","token":"f00d","pid":42,"store":"etcd://127.0.0.1:2379","job":"j","follow_limit_s":39})");
  const auto c = read_control_file(file);
  REQUIRE(c.has_value());
  CHECK(c->address == "127.0.0.1:5");
  CHECK(c->token == "f00d");
  CHECK(c->pid == 42);
  CHECK(c->store == "etcd://127.0.0.1:2379");
  CHECK(c->job == "j");
  CHECK(c->follow_limit_s == 39);
  const auto plain = read_control_file(dir.write("plain.json", R"({"address":"127.0.0.1:5","token":"f00d"})"));
  REQUIRE(plain.has_value());
  CHECK(plain->pid == 0);
  CHECK(plain->store.empty());
  CHECK(plain->follow_limit_s == 0);
  CHECK_FALSE(read_control_file(dir.write("no-token.json", R"({"address":"127.0.0.1:5"})")));
  CHECK_FALSE(read_control_file(dir.write("torn.json", R"({"address":"127.0.0.1:5","tok)")));
  CHECK_FALSE(read_control_file(dir.write("empty.json", "")));
  CHECK_FALSE(read_control_file(dir.path() / "missing.json"));
  CHECK(leaderless_limit_s(3) == 39);
}

TEST_CASE("a run ended under its leader only by a summary no older than control.json that is not a deposition") {
  testing::temp_dir dir;
  const auto control = fs::path(dir.write("control.json", R"({"address":"127.0.0.1:5","token":"f00d","pid":1})"));
  CHECK_FALSE(run_ended_under_its_leader(dir.path()));  // no summary: a leader that died wrote none
  const auto summary = fs::path(dir.write("summary.json", R"({"state":"finished","exit_code":0})"));
  touch_relative(summary, control, 1);
  CHECK(run_ended_under_its_leader(dir.path()));
  touch_relative(summary, control, -1);  // an earlier run's, before this leader's control.json
  CHECK_FALSE(run_ended_under_its_leader(dir.path()));
  dir.write("summary.json", R"({"state":"deposed","exit_code":6})");
  touch_relative(summary, control, 1);
  CHECK_FALSE(run_ended_under_its_leader(dir.path()));  // the job goes on under the next leader
  dir.write("summary.json", R"({"state":"failed","exit_code":1})");
  touch_relative(summary, control, 1);
  CHECK(run_ended_under_its_leader(dir.path()));
  dir.write("summary.json", R"({"state":)");
  touch_relative(summary, control, 1);
  CHECK_FALSE(run_ended_under_its_leader(dir.path()));  // torn: not an end
  // The CLI's view: a summary older than control.json counts once control.json's pid is gone.
  dir.write("summary.json", R"({"state":"finished"})");
  touch_relative(summary, control, -1);
  const control_file live{"127.0.0.1:5", "f00d", static_cast<int64_t>(::getpid()), "", "", "", 0};
  CHECK_FALSE(ended_run_summary(dir.path(), live).has_value());
  touch_relative(summary, control, 1);
  CHECK(ended_run_summary(dir.path(), live).has_value());
}
