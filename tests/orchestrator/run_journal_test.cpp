// The run journals: every line whole or not at all, a journal that cannot be written says
// so (failed()) instead of losing lines quietly, and attempts are numbered across restarts
// and rollbacks.
#include "run_journal.hpp"

#include "core/process.hpp"
#include "support/process_runner.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using msomni::orchestrator::run_journal;

namespace {

std::vector<std::string> lines_of(const fs::path& p) {
  std::istringstream in(msomni::testing::read_text(p));
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("attempts are numbered across journal openings and rollbacks, on every line") {
  msomni::testing::temp_dir tmp;
  {
    run_journal j(tmp.path());
    CHECK(j.attempt() == 1);
    CHECK(j.metric({{"step", 1}}));
    CHECK(j.begin_attempt(0, "rolled back") == 2);
    CHECK(j.metric({{"step", 1}}));
  }
  run_journal again(tmp.path());
  CHECK(again.attempt() == 3);
  CHECK(again.event("resume", "a \"quoted\" reason"));
  msomni::orchestrator::event_context ctx;
  ctx.step = 7;
  ctx.epoch = 2;
  ctx.rank = "rank-1";
  ctx.node = "n1";
  CHECK(again.event("rank_down", "rank-1 died", ctx));
  const auto metrics = lines_of(tmp.path() / "metrics.jsonl");
  REQUIRE(metrics.size() == 2);
  CHECK(metrics[0] == "{\"step\":1,\"attempt\":1}");
  CHECK(metrics[1] == "{\"step\":1,\"attempt\":2}");
  const auto events = lines_of(tmp.path() / "events.jsonl");
  REQUIRE(events.size() == 3);
  const auto first = nlohmann::json::parse(events[0]), second = nlohmann::json::parse(events[1]);
  CHECK(first.at("event") == "attempt_started");
  CHECK(first.at("kind") == "attempt_started");
  CHECK(first.at("step") == 0);  // the step the attempt resumes from
  CHECK(first.at("reason") == "attempt 2 resumes from step 0: rolled back");
  CHECK(first.at("attempt") == 2);
  CHECK(first.at("time_ms").is_number_integer());
  CHECK(second.at("reason") == "a \"quoted\" reason");
  CHECK(second.at("attempt") == 3);
  // The fields in the order people and scripts have always read them.
  CHECK(events[1].find("{\"time_ms\":") == 0);
  CHECK(events[1].find("\"event\":\"resume\",\"reason\":") != std::string::npos);
  // Structured fields only where the writer knows them.
  CHECK_FALSE(second.contains("step"));
  CHECK_FALSE(second.contains("rank"));
  const auto third = nlohmann::json::parse(events[2]);
  CHECK(third.at("kind") == "rank_down");
  CHECK(third.at("step") == 7);
  CHECK(third.at("epoch") == 2);
  CHECK(third.at("rank") == "rank-1");
  CHECK(third.at("node") == "n1");
  CHECK_FALSE(again.failed());
}

TEST_CASE("a full disk fails the journal loudly") {
  msomni::testing::temp_dir tmp;
  fs::create_symlink("/dev/full", tmp.path() / "metrics.jsonl");
  run_journal j(tmp.path());
  CHECK_FALSE(j.metric({{"step", 1}}));
  CHECK(j.failed());
  CHECK(j.failure().find("metrics.jsonl: No space left on device") != std::string::npos);
  CHECK_FALSE(j.event("later", "refused too, once failed"));
}

TEST_CASE("a write cut short by the file size limit leaves no torn line") {
  msomni::testing::temp_dir tmp;
  {
    run_journal j(tmp.path());
    REQUIRE(j.metric({{"step", 1}}));  // 23 bytes
  }
  // In a child of its own: the file size limit would cut this process's writes too.
  auto child = msomni::process::fork_running([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{40, 40};  // room for 17 more bytes: the next line is cut short by the kernel
    ::setrlimit(RLIMIT_FSIZE, &lim);
    run_journal j(tmp.path());
    const bool wrote = j.metric({{"step", 2}, {"loss", 1.2345678}});
    return !wrote && j.failed() && j.failure().find("metrics.jsonl") != std::string::npos ? 0 : 1;
  });
  const auto status = child.wait();
  REQUIRE(status);
  CHECK(status->signal == 0);
  CHECK(status->code == 0);
  CHECK(msomni::testing::read_text(tmp.path() / "metrics.jsonl") == "{\"step\":1,\"attempt\":1}\n");
}

TEST_CASE("the highest epoch of an events.jsonl: torn, foreign and epoch-less lines are skipped") {
  std::istringstream none("");
  CHECK(msomni::orchestrator::history_in(none).highest_epoch == 0);
  std::istringstream events(
      "{\"event\":\"attempt_started\",\"attempt\":1}\n"
      "{\"event\":\"ranks_started\",\"epoch\":3,\"attempt\":1}\n"
      "{\"event\":\"recovery\",\"epoch\":5,\"attempt\":1}\n"
      "{\"event\":\"control_takeover\",\"epoch\":4,\"attempt\":2}\n"
      "not json with \"epoch\": 99\n"
      "{\"event\":\"odd\",\"epoch\":\"7\"}\n"
      "{\"event\":\"recovery\",\"epoch\":6,\"attem");  // torn: the writer died mid-line
  CHECK(msomni::orchestrator::history_in(events).highest_epoch == 5);
}

TEST_CASE("the next rank id of an events.jsonl and the last step of a metrics.jsonl: torn and foreign lines are skipped") {
  std::istringstream none("");
  CHECK(msomni::orchestrator::history_in(none).next_rank_id == 0);
  std::istringstream events(
      "{\"kind\":\"rank_spawn\",\"rank\":\"rank-0\"}\n"
      "{\"kind\":\"rank_spawn\",\"rank\":\"rank-11\"}\n"
      "{\"kind\":\"rank_spawn\",\"rank\":\"rank-x3\"}\n"
      "{\"kind\":\"note\",\"detail\":\"rank-40 in a text\"}\n"
      "{\"kind\":\"rank_spawn\",\"rank\":\"rank-");  // torn
  CHECK(msomni::orchestrator::history_in(events).next_rank_id == 12);
  std::istringstream metrics(
      "{\"step\":1,\"attempt\":1}\n"
      "{\"step\":2,\"attempt\":1}\n"
      "{\"step\":3,\"att");  // torn: the writer died mid-line
  CHECK(msomni::orchestrator::last_step_in(metrics) == 2);
  std::istringstream empty("");
  CHECK(msomni::orchestrator::last_step_in(empty) == 0);
}
