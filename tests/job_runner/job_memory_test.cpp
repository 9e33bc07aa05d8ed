// What msomni job reports of its run's memory: memory_advice lines of events.jsonl in, the
// largest forecast plus margin over the ranks of the newest attempt out, once per change.
#include "job_memory.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

using msomni::job_runner::memory_report_tracker;

namespace {

std::string advice(const std::string& rank, double forecast_gb, double margin_gb, double device_gb, int attempt,
                   int step = 5) {
  return nlohmann::json{{"event", "memory_advice"}, {"kind", "memory_advice"}, {"rank", rank},
                        {"step", step},             {"attempt", attempt},      {"action", "reserve"},
                        {"gb", forecast_gb + margin_gb}, {"forecast_gb", forecast_gb}, {"margin_gb", margin_gb},
                        {"device_gb", device_gb}}
      .dump();
}

}  // namespace

TEST_CASE("the largest forecast plus margin over the ranks is reported once, and again only when it changes") {
  memory_report_tracker t("crit");
  CHECK_FALSE(t.due());  // nothing known yet
  CHECK(t.take_line(advice("rank-0", 40, 3.5, 80, 1)));
  CHECK(t.take_line(advice("rank-1", 42, 3.5, 80, 1, 7)));
  const auto r = t.due();
  REQUIRE(r);
  CHECK(r->job == "crit");
  CHECK(r->forecast_peak_bytes == 45'500'000'000u);
  CHECK(r->device_bytes == 80'000'000'000u);
  CHECK(r->step == 7);
  CHECK_FALSE(t.due());  // unchanged: not sent again
  CHECK(t.take_line(advice("rank-0", 41, 3.5, 80, 1)));
  CHECK_FALSE(t.due());  // rank-1 still has the largest
  CHECK(t.take_line(advice("rank-1", 30, 3.5, 80, 1)));
  REQUIRE(t.due());
  CHECK(t.forecast_peak_bytes() == 44'500'000'000u);
  t.resend();  // a restarted scheduler hears the current view again
  CHECK(t.due());
  CHECK(t.reports_due() == 3);
}

TEST_CASE("a new attempt forgets the earlier attempts' forecasts, and lines that are not advice are passed over") {
  memory_report_tracker t("job");
  CHECK(t.take_line(advice("rank-0", 40, 3.5, 80, 1)));
  CHECK(t.take_line(advice("rank-1", 60, 3.5, 80, 1)));
  CHECK(t.take_line(R"({"event":"attempt_started","kind":"attempt_started","attempt":2})") == false);
  CHECK(t.ranks() == 0);
  CHECK(t.take_line(advice("rank-0", 20, 3.5, 80, 2)));
  CHECK(t.forecast_peak_bytes() == 23'500'000'000u);
  CHECK_FALSE(t.take_line("{\"kind\":\"memory_advice\",\"rank\":"));                    // torn
  CHECK_FALSE(t.take_line("[1,2]"));                                                  // not an object
  CHECK_FALSE(t.take_line(R"({"kind":"memory_advice","forecast_gb":1,"margin_gb":1})"));  // no rank
  CHECK_FALSE(t.take_line(advice("rank-0", -1, 3.5, 80, 2)));                          // no usable forecast
  CHECK(t.forecast_peak_bytes() == 23'500'000'000u);
}
