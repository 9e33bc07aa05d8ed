// The orchestrator's JSON: metrics lines and status replies parse as JSON, keep their field
// names, order and values, and write a non-finite number as null with its flag.
#include "orchestrator_json.hpp"

#include "core/json_number.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

using namespace msomni;
using namespace msomni::orchestrator;

namespace {

metrics_record record() {
  metrics_record m;
  m.step = 7;
  m.loss = 2.302585124969482;
  m.world_size = 2;
  m.step_time_ms = 12.3456789;
  m.tokens_per_s = 1234.56;
  m.data_wait_ms = 0.5;
  m.checkpoint_ms = 0;
  m.downgraded_samples = 3;
  m.time_ms = 1700000000123;
  m.bad_samples = {{"corrupt_image", 2}, {"too_large", 1}};
  m.grad_norm = 0.75;
  return m;
}

}  // namespace

TEST_CASE("a metrics line keeps its fields in order, with the journal's precision") {
  const auto text = json_text(metrics_json(record()));
  CHECK(text.find(R"({"step":7,"loss":2.30258512,"world_size":2,"step_time_ms":12.346,"tokens_per_s":1234.6,)") == 0);
  const auto j = nlohmann::json::parse(text);
  CHECK(j.at("data_wait_ms") == 0.5);
  CHECK(j.at("downgraded_samples") == 3);
  CHECK(j.at("time_ms") == 1700000000123);
  CHECK(j.at("bad_samples") == nlohmann::json{{"corrupt_image", 2}, {"too_large", 1}});
  CHECK(j.at("grad_norm") == 0.75);
  CHECK_FALSE(j.contains("nonfinite"));
  CHECK_FALSE(j.contains("loss_nonfinite"));
  CHECK_FALSE(j.contains("optimizer_skipped"));
}

TEST_CASE("a non-finite loss is null with its flag, and the line says which value it was") {
  auto m = record();
  m.loss = std::numeric_limits<double>::quiet_NaN();
  m.grad_norm = std::numeric_limits<double>::infinity();
  m.optimizer_skipped = true;
  const auto text = json_text(metrics_json(m));
  CHECK(text.find("nan") == text.find("\"nan\"") + 1);  // only as a name, never as a number
  const auto j = nlohmann::json::parse(text);
  CHECK(j.at("loss").is_null());
  CHECK(j.at("loss_nonfinite") == true);
  CHECK(std::isnan(*get_number(j, "loss")));
  CHECK(j.at("grad_norm").is_null());
  CHECK(j.at("grad_norm_nonfinite") == true);
  CHECK(j.at("nonfinite") == nlohmann::json{{"loss", "nan"}, {"grad_norm", "inf"}});
  CHECK(j.at("optimizer_skipped") == true);
}

TEST_CASE("the status reply lists live ranks, agents, bad samples and the departed ranks apart") {
  job_status s;
  s.phase = "running";
  s.epoch = 3;
  s.step = 40;
  s.total_steps = 100;
  s.world = 1;
  s.target = 2;
  s.grad_accum = 4;
  s.ranks = {{"rank-0", "node \"a\"", 42, member_state::active, 40}, {"rank-2", "b", 7, member_state::starting, 0}};
  s.departed = {{"rank-1", "b", 0, member_state::dead, 31}};
  s.agents = {{"node \"a\"", "r1", "s1", 2, true}};
  const auto text = json_text(status_json(s, {{"corrupt_image", 5}}));
  CHECK(text.find(R"({"phase":"running","epoch":3,"step":40,"total_steps":100,"world":1,"target":2,"grad_accum":4,)") == 0);
  const auto j = nlohmann::json::parse(text);
  REQUIRE(j.at("ranks").size() == 2);
  CHECK(j.at("ranks")[0] == nlohmann::json{{"name", "rank-0"}, {"node", "node \"a\""}, {"pid", 42}, {"state", "active"}, {"step", 40}});
  CHECK(j.at("ranks")[1].at("state") == "starting");
  REQUIRE(j.at("departed").size() == 1);
  CHECK(j.at("departed")[0] == nlohmann::json{{"name", "rank-1"}, {"node", "b"}, {"pid", 0}, {"state", "dead"}, {"step", 31}});
  CHECK(j.at("agents")[0] == nlohmann::json{{"node", "node \"a\""}, {"rack", "r1"}, {"switch", "s1"}, {"slots", 2}, {"alive", true}});
  CHECK(j.at("bad_samples") == nlohmann::json{{"corrupt_image", 5}});
}

TEST_CASE("bytes that are not UTF-8 do not stop a line from being written") {
  ordered_json j{{"reason", std::string("bad \xff byte")}};
  CHECK(nlohmann::json::parse(json_text(j)).at("reason") == "bad \xef\xbf\xbd byte");
}
