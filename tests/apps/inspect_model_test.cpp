// msomni inspect's pure model on hand-made snapshots: rows from whatever families are there,
// rates from two snapshots, sorting, and layouts that fit narrow and short terminals.
#include "inspect_model.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace msomni::cli::inspect;

namespace {

json series(json labels, double v) { return {{"labels", std::move(labels)}, {"value", v}}; }
json histogram(json labels, uint64_t count, double sum) { return {{"labels", std::move(labels)}, {"count", count}, {"sum", sum}}; }

// A two-rank job: rank-0 handled 100 messages in its worker, rank-1 10; `scale` multiplies
// the counters (a later snapshot).
json job_reply(double scale) {
  json j = json::object();
  j["phase"] = "running";
  j["epoch"] = 1;
  j["step"] = static_cast<int>(40 * scale);
  j["total_steps"] = 1000;
  j["world"] = 2;
  j["target"] = 2;
  j["grad_accum"] = 1;
  j["ranks"] = json::array({json{{"name", "rank-0"}, {"node", "local"}, {"pid", 101}, {"state", "active"}, {"step", 40}},
                            json{{"name", "rank-1"}, {"node", "local"}, {"pid", 102}, {"state", "active"}, {"step", 40}}});
  j["agents"] = json::array({json{{"node", "local"}, {"rack", ""}, {"switch", ""}, {"slots", 4}, {"alive", true}}});
  j["bad_samples"] = json::object();
  auto& m = j["metrics"] = json::object();
  const json r0{{"job", "demo"}, {"rank", "rank-0"}, {"node", "local"}};
  const json r1{{"job", "demo"}, {"rank", "rank-1"}, {"node", "local"}};
  auto with = [](json l, const char* k, const char* v) {
    l[k] = v;
    return l;
  };
  m["msomni_actor_mailbox_depth"] = json::array({series(with(r0, "actor", "worker"), 3), series(with(r1, "actor", "worker"), 0),
                                                 series({{"job", "demo"}, {"node", "control"}, {"actor", "orchestrator"}}, 0)});
  m["msomni_actor_messages_total"] =
      json::array({series(with(with(r0, "actor", "worker"), "message", "plan"), 60 * scale),
                   series(with(with(r0, "actor", "worker"), "message", "tick"), 40 * scale),
                   series(with(with(r1, "actor", "worker"), "message", "plan"), 10 * scale)});
  m["msomni_actor_handling_seconds"] = json::array({histogram(with(r0, "actor", "worker"), 100, 0.5)});
  m["msomni_rank_step_seconds"] = json::array({histogram(r0, static_cast<uint64_t>(40 * scale), 4 * scale * scale),
                                               histogram(r1, 40, 8)});
  m["msomni_rank_loss"] = json::array({series(r0, 2.5), series(r1, 2.5)});
  m["msomni_rank_memory_bytes"] = json::array({series(with(r0, "kind", "host"), 3 * 1024.0 * 1024 * 1024)});
  m["msomni_rank_threads"] = json::array({series(with(r0, "device", "cpu"), 2)});
  m["msomni_data_stage_fill"] = json::array({series(with(r0, "stage", "tensor"), 2), series(with(r0, "stage", "reader"), 8)});
  m["msomni_data_stage_capacity"] = json::array({series(with(r0, "stage", "tensor"), 4), series(with(r0, "stage", "reader"), 8)});
  m["msomni_data_samples_total"] = json::array({series(with(r0, "modality", "video"), 50 * scale)});
  m["msomni_data_downgrades_total"] = json::array({series(with(r0, "modality", "video"), 7)});
  m["msomni_data_bad_samples_total"] = json::array({series(with(r0, "reason", "decode_error"), 2)});
  j["timeline"] = json::array({json{{"time_ms", 1000}, {"kind", "job_started"}, {"epoch", 1}, {"step", 0}, {"detail", "first"}},
                               json{{"time_ms", 2000}, {"kind", "checkpoint"}, {"epoch", 1}, {"step", 25}, {"detail", "second"}}});
  j["predictor"] = {{"idle_ratio", 0.25}, {"confidence", 0.5}, {"horizon_s", 600},
                    {"windows", json::array({json{{"start_in_s", 30.0}, {"length_s", 12.5}},
                                                     json{{"start_in_s", 90.0}, {"length_s", 0.012}}})}};
  return j;
}

// job_reply with the memory predictor's series: a 2 GB budget and a 0.5 GB margin; rank-0's
// forecast 1.2 GB leaves 0.8 GB (fits), rank-1's 1.8 GB leaves 0.2 GB (over budget - margin).
json memory_reply() {
  json j = job_reply(1);
  auto& m = j["metrics"];
  const auto rank = [](const char* r, const char* kind) {
    return json{{"job", "demo"}, {"rank", r}, {"node", "local"}, {"kind", kind}};
  };
  const auto control = [](const char* k, const char* v) { return json{{"job", "demo"}, {"node", "control"}, {k, v}}; };
  m["msomni_rank_compute_memory_bytes"] =
      json::array({series(rank("rank-0", "in_use"), 0.9e9), series(rank("rank-0", "peak"), 1.1e9),
                   series(rank("rank-0", "budget"), 2e9), series(rank("rank-1", "in_use"), 1.0e9),
                   series(rank("rank-1", "peak"), 1.7e9), series(rank("rank-1", "budget"), 2e9)});
  m["msomni_memory_forecast_bytes"] =
      json::array({series(control("target", "rank-0"), 1.2e9), series(control("target", "rank-1"), 1.8e9)});
  m["msomni_memory_advice_total"] = json::array({series(control("action", "reserve"), 5), series(control("action", "overflow"), 2)});
  m["msomni_memory_fits_total"] = json::array({series(control("result", "requested"), 3), series(control("result", "split"), 2),
                                               series(control("result", "unfit"), 1)});
  m["msomni_memory_samples_total"] = json::array({series(control("result", "accepted"), 40), series(control("result", "refused"), 1)});
  m["msomni_rank_fit_requests_total"] =
      json::array({series({{"job", "demo"}, {"rank", "rank-0"}, {"node", "local"}, {"result", "taken"}}, 2),
                   series({{"job", "demo"}, {"rank", "rank-1"}, {"node", "local"}, {"result", "taken"}}, 1)});
  const auto event = [](double t, const char* kind, int step, const char* rank, const char* detail) {
    return json{{"time_ms", t}, {"kind", kind}, {"epoch", 1}, {"step", step}, {"rank", rank}, {"detail", detail}};
  };
  j["memory"] = {{"predictor_enabled", true}, {"safety_margin_gb", 0.5}, {"device_memory_gb", 2.0}, {"horizon_steps", 10},
                 {"events", json::array({event(3000, "memory_advice", 20, "rank-1", "rank-1: forecast peak 1.8 GB"),
                                         event(4000, "memory_fit", 31, "rank-1", "step 31: ran 2 parts")})}};
  return j;
}

table first_table(const view_content& v) {  // a copy: views are often temporaries
  REQUIRE_FALSE(v.tables.empty());
  return v.tables.front();
}

size_t column_of(const table& t, const std::string& name) {
  for (size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c].name == name) return c;
  FAIL("no column " << name);
  return 0;
}

// The text of `name` in the row whose first columns are `process` and `second`.
std::string cell_text(const table& t, const std::string& process, const std::string& second, const std::string& name) {
  for (const auto& row : t.rows)
    if (row[0].text == process && row[1].text == second) return row[column_of(t, name)].text;
  FAIL("no row " << process << " " << second);
  return {};
}

}  // namespace

TEST_CASE("inspect model: actors by process with depth, busy state and mean handling time") {
  const snapshot now{job_reply(1), nullptr, 10};
  const auto v = build_view(view::actors, now, nullptr);
  const auto t = first_table(v);
  CHECK(t.rows.size() == 3);
  CHECK(cell_text(t, "rank-0", "worker", "MAILBOX") == "3");
  CHECK(cell_text(t, "rank-0", "worker", "STATE") == "busy");
  CHECK(cell_text(t, "rank-1", "worker", "STATE") == "idle");
  CHECK(cell_text(t, "control", "orchestrator", "STATE") == "idle");
  CHECK(cell_text(t, "rank-0", "worker", "MESSAGES") == "100");
  CHECK(cell_text(t, "rank-0", "worker", "MEAN_MS") == "5.000");
  CHECK(cell_text(t, "rank-0", "worker", "MSGS/S") == "-");  // one snapshot: no rate yet
}

TEST_CASE("inspect model: rates are counter deltas over the time between two snapshots") {
  const snapshot before{job_reply(1), nullptr, 10};
  const snapshot now{job_reply(3), nullptr, 14};
  const auto actors = first_table(build_view(view::actors, now, &before));
  CHECK(cell_text(actors, "rank-0", "worker", "MSGS/S") == "50.0");  // (300 - 100) / 4 s
  CHECK(cell_text(actors, "rank-1", "worker", "MSGS/S") == "5.0");
  const auto data = build_view(view::data, now, &before);
  const auto flows = first_table(data);
  CHECK(cell_text(flows, "rank-0", "video", "SAMPLES/S") == "25.0");  // (150 - 50) / 4 s
  CHECK(cell_text(flows, "rank-0", "video", "DOWNGRADES") == "7");
  // The step time over the interval: (36 - 4) s over (120 - 40) steps.
  const auto ranks = first_table(build_view(view::ranks, now, &before));
  CHECK(cell_text(ranks, "rank-0", "local", "STEP_MS") == "400.0");
  // A counter that went back (a restarted process) gives no rate rather than a negative one.
  const auto back = first_table(build_view(view::actors, before, &now));
  CHECK(cell_text(back, "rank-0", "worker", "MSGS/S") == "-");
}

TEST_CASE("inspect model: ranks from the status with the rank series, data stages in pipeline order") {
  const snapshot now{job_reply(1), nullptr, 10};
  const auto ranks = first_table(build_view(view::ranks, now, nullptr));
  REQUIRE(ranks.rows.size() == 2);
  CHECK(cell_text(ranks, "rank-0", "local", "PID") == "101");
  CHECK(cell_text(ranks, "rank-0", "local", "DEVICE") == "cpu");
  CHECK(cell_text(ranks, "rank-0", "local", "MEMORY") == "3.0G");
  CHECK(cell_text(ranks, "rank-1", "local", "MEMORY") == "-");
  CHECK(cell_text(ranks, "rank-1", "local", "STEP_MS") == "200.0");
  const auto data = build_view(view::data, now, nullptr);
  REQUIRE(data.tables.size() == 2);
  const auto& stages = data.tables[1];
  REQUIRE(stages.rows.size() == 2);
  CHECK(stages.rows[0][1].text == "reader");  // before tensor, whatever the reply's order
  CHECK(cell_text(stages, "rank-0", "tensor", "FILL").find("50%") != std::string::npos);
  CHECK(data.lines.front() == "downgrades 7, bad samples 2");
  CHECK(data.lines.at(1).find("decode_error 2") != std::string::npos);
}

TEST_CASE("inspect model: a reply without rank series gives empty tables, not errors") {
  json bare = job_reply(1);
  bare["metrics"] = json::object();
  const snapshot now{bare, nullptr, 1};
  for (size_t i = 0; i < view_count; ++i) {
    const auto v = build_view(static_cast<view>(i), now, nullptr);
    CHECK_FALSE(v.lines.empty());
  }
  CHECK(first_table(build_view(view::actors, now, nullptr)).rows.empty());
  CHECK(first_table(build_view(view::ranks, now, nullptr)).rows.size() == 2);  // the status still lists them
  CHECK(job_name(bare) == "?");
  CHECK(job_name(job_reply(1)) == "demo");
}

TEST_CASE("inspect model: o cycles the sort column, O reverses it, numbers sort by value") {
  const snapshot now{job_reply(1), nullptr, 10};
  console_state st;
  CHECK(on_key(st, 'a', 7) == key_effect::redraw);
  auto t = first_table(build_view(view::actors, now, nullptr));
  const auto mailbox = column_of(t, "MAILBOX");
  auto& sort = st.sort[static_cast<size_t>(view::actors)];
  for (size_t i = 0; i <= mailbox; ++i) on_key(st, 'o', t.columns.size());
  CHECK(sort.column == mailbox);
  CHECK(on_key(st, 'O', t.columns.size()) == key_effect::redraw);
  sort_table(t, sort);
  CHECK(t.rows.front()[mailbox].text == "3");  // descending
  CHECK(t.rows.front()[0].text == "rank-0");
  on_key(st, 'O', t.columns.size());
  sort_table(t, sort);
  CHECK(t.rows.back()[mailbox].text == "3");
  // The column wraps around; Tab and the view keys move between views; q quits.
  for (size_t i = mailbox + 1; i <= t.columns.size(); ++i) on_key(st, 'o', t.columns.size());
  CHECK(sort.column == 0u);
  CHECK(on_key(st, '\t', 0) == key_effect::redraw);
  CHECK(st.current == view::ranks);
  on_key(st, '6', 0);
  CHECK(st.current == view::scheduler);
  on_key(st, '\t', 0);
  CHECK(st.current == view::memory);
  on_key(st, '\t', 0);
  CHECK(st.current == view::actors);
  on_key(st, 'd', 0);
  CHECK(st.current == view::data);
  CHECK(on_key(st, 'x', 0) == key_effect::none);
  CHECK(on_key(st, 'q', 0) == key_effect::quit);
  // A row without the number goes last in either direction.
  table m{"t", {{"N", true}}, {{{"-", std::nullopt}}, {{"5", 5.0}}, {{"1", 1.0}}}};
  sort_table(m, {0, false});
  CHECK(m.rows[0][0].text == "1");
  CHECK(m.rows[2][0].text == "-");
  sort_table(m, {0, true});
  CHECK(m.rows[0][0].text == "5");
  CHECK(m.rows[2][0].text == "-");
}

TEST_CASE("inspect model: narrow widths drop columns from the right and cut rows, never overflow") {
  const snapshot now{job_reply(1), nullptr, 10};
  const auto t = first_table(build_view(view::actors, now, nullptr));
  const auto wide = layout_table(t, 200, 10);
  CHECK(wide.front().find("STATE") != std::string::npos);
  const auto narrow = layout_table(t, 30, 10);
  CHECK(narrow.front().find("PROCESS") == 0);
  CHECK(narrow.front().find("STATE") == std::string::npos);
  for (const auto& line : narrow) CHECK(line.size() <= 30);
  const auto tiny = layout_table(t, 4, 10);  // even the first column is cut
  for (const auto& line : tiny) CHECK(line.size() <= 4);
  const auto short_rows = layout_table(t, 200, 2);
  REQUIRE(short_rows.size() == 3);
  CHECK(short_rows.back() == "... 2 more rows");
  // Every screen size from tiny to wide: no line wider than the width, no more lines than the
  // height, and below 40x10 a single "too small" line.
  for (size_t w : {1u, 10u, 39u, 40u, 41u, 60u, 80u, 120u, 300u})
    for (size_t h : {1u, 5u, 9u, 10u, 11u, 24u, 60u})
      for (size_t v = 0; v < view_count; ++v) {
        console_state st;
        st.current = static_cast<view>(v);
        const auto lines = render_screen(st, now, nullptr, w, h);
        CHECK(lines.size() <= h);
        for (const auto& line : lines) CHECK(line.size() <= w);
        if (w < min_width || h < min_height) {
          REQUIRE(lines.size() == 1);
          CHECK(lines[0].find(w >= 18 ? "terminal too small" : "") != std::string::npos);
        }
      }
  console_state st;
  const auto screen = render_screen(st, now, nullptr, 120, 40);
  CHECK(screen[0].find("job demo") != std::string::npos);
  CHECK(screen[0].find("step 40/1000") != std::string::npos);
  CHECK(screen[1].find("[1 actors]") != std::string::npos);
}

TEST_CASE("inspect model: elastic timeline newest first, predictor windows, scheduler jobs, plain text") {
  json sched = {{"policy", "omni"}, {"gpus_total", 8}, {"gpus_free", 2},
                {"pending", {{"critical", 0}, {"regular", 1}, {"best_effort", 2}}}, {"queue_capacity", 64},
                {"running", 2}, {"borrowed", 0}, {"draining", 0}, {"guests", 1}, {"decisions", 5}, {"rejected", 0},
                {"jobs", json::array({json{{"job", "a"}, {"class", "critical"}, {"phase", "running"}, {"gpus", 4},
                                           {"replicas", 4}, {"borrowed", false}, {"host", ""}, {"for_s", 12.0}}})}};
  const snapshot now{job_reply(1), sched, 10};
  const auto events = first_table(build_view(view::elastic, now, nullptr));
  REQUIRE(events.rows.size() == 2);
  CHECK(events.rows[0][1].text == "checkpoint");
  const auto p = build_view(view::predictor, now, nullptr);
  CHECK(p.lines.front() == "idle ratio 0.250, confidence 0.500, horizon 600 s");
  CHECK(cell_text(first_table(p), "1", "30.0", "LENGTH_S") == "12.500");
  CHECK(cell_text(first_table(p), "2", "90.0", "LENGTH_S") == "0.012");  // a checkpoint phase of 12 ms is not 0.0
  CHECK(first_table(build_view(view::scheduler, now, nullptr)).rows.at(0)[0].text == "a");
  const auto text = render_text(now);
  for (const char* part : {"== actors ==", "== ranks ==", "== data ==", "== elastic ==", "== predictor ==", "== scheduler ==",
                           "== memory =="})
    CHECK(text.find(part) != std::string::npos);
  const snapshot job_only{job_reply(1), nullptr, 10};
  CHECK(render_text(job_only).find("== scheduler ==") == std::string::npos);
  const snapshot sched_only{nullptr, sched, 10};
  CHECK(render_text(sched_only).find("== actors ==") == std::string::npos);
}

TEST_CASE("inspect model: memory view sets each rank's forecast plus the margin against its budget") {
  const snapshot now{memory_reply(), nullptr, 10};
  const auto v = build_view(view::memory, now, nullptr);
  REQUIRE(v.tables.size() == 2);
  const auto& ranks = v.tables[0];
  REQUIRE(ranks.rows.size() == 2);
  const auto at = [&](const char* rank, const char* column) {
    for (const auto& row : ranks.rows)
      if (row[0].text == rank) return row[column_of(ranks, column)];
    FAIL("no row " << rank);
    return cell{};
  };
  CHECK(at("rank-0", "IN_USE").text == "900.0MB");
  CHECK(at("rank-0", "PEAK").text == "1.10GB");
  CHECK(at("rank-0", "BUDGET").text == "2.00GB");
  CHECK(at("rank-0", "FORECAST").text == "1.20GB");
  CHECK(at("rank-0", "HEADROOM").text == "800.0MB");
  CHECK(*at("rank-0", "HEADROOM").number == doctest::Approx(0.8e9));
  CHECK(at("rank-0", "FIT").text == "ok");
  CHECK(at("rank-1", "HEADROOM").text == "200.0MB");
  CHECK(at("rank-1", "FIT").text == "OVER");  // 1.8 + 0.5 > 2
  CHECK(at("rank-0", "HOST").text == "3.22GB");  // 3 GiB resident
  CHECK(at("rank-1", "HOST").text == "-");
  REQUIRE(v.lines.size() == 6);
  CHECK(v.lines[0] == "forecast: peak of the next 10 steps, margin 0.500 GB, device 2.000 GB");
  CHECK(v.lines[1] == "forecast + margin over the budget: 1 of 2 ranks");
  CHECK(v.lines[2] == "advice: reserve 5, evict 0, overflow 2");
  CHECK(v.lines[3] == "fits: requested 3, replayed 0, split 2, keyframe 0, unchanged 0, unfit 1");
  CHECK(v.lines[4] == "rank fit requests: taken 3, dropped 0, stale 0, superseded 0");
  CHECK(v.lines[5] == "samples: accepted 40, refused 1");
  const auto& events = v.tables[1];
  REQUIRE(events.rows.size() == 2);
  CHECK(events.rows[0][1].text == "memory_fit");  // newest first
  CHECK(events.rows[0][column_of(events, "STEP")].text == "31");
  CHECK(events.rows[1][column_of(events, "DETAIL")].text == "rank-1: forecast peak 1.8 GB");

  // A negative headroom shows as such; the margin is what decides the marker.
  json tight = memory_reply();
  tight["metrics"]["msomni_memory_forecast_bytes"][0]["value"] = 2.5e9;
  tight["memory"]["safety_margin_gb"] = 0;
  const auto t2 = build_view(view::memory, snapshot{tight, nullptr, 10}, nullptr).tables[0];
  CHECK(t2.rows[0][column_of(t2, "HEADROOM")].text == "-500.0MB");
  CHECK(t2.rows[0][column_of(t2, "FIT")].text == "OVER");
  CHECK(t2.rows[1][column_of(t2, "FIT")].text == "ok");  // 1.8 GB within 2 GB, no margin
}

TEST_CASE("inspect model: memory view without the settings, the predictor off, or only the timeline's events") {
  // No "memory" object (an older job): no margin, so no marker; the rank's budget still counts.
  json old = memory_reply();
  old.erase("memory");
  old["timeline"].push_back(json{{"time_ms", 5000}, {"kind", "memory_advice"}, {"epoch", 1}, {"step", 7},
                                 {"rank", "rank-0"}, {"detail", "rank-0: reserve"}});
  const auto v = build_view(view::memory, snapshot{old, nullptr, 10}, nullptr);
  const auto& ranks = v.tables[0];
  CHECK(ranks.rows[0][column_of(ranks, "HEADROOM")].text == "800.0MB");
  CHECK(ranks.rows[0][column_of(ranks, "FIT")].text == "-");
  CHECK(v.lines[0].find("margin ?") != std::string::npos);
  CHECK(v.lines[1].find("advice: ") == 0);  // no over-budget count without the margin
  REQUIRE(v.tables[1].rows.size() == 1);  // the timeline's memory event, not its others
  CHECK(v.tables[1].rows[0][1].text == "memory_advice");

  // A rank that reports no budget (0) takes memory.device_memory_gb.
  json no_budget = memory_reply();
  for (auto& s : no_budget["metrics"]["msomni_rank_compute_memory_bytes"])
    if (s["labels"]["kind"] == "budget") s["value"] = 0;
  no_budget["memory"]["device_memory_gb"] = 4.0;
  const auto t = build_view(view::memory, snapshot{no_budget, nullptr, 10}, nullptr).tables[0];
  CHECK(t.rows[0][column_of(t, "BUDGET")].text == "4.00GB");
  CHECK(t.rows[1][column_of(t, "FIT")].text == "ok");

  // The predictor off: said so, no forecast; a bare reply gives rows from the status only.
  json off = job_reply(1);
  off["memory"] = {{"predictor_enabled", false}, {"safety_margin_gb", 3.5}, {"device_memory_gb", 80.0},
                   {"horizon_steps", 10}, {"events", json::array()}};
  const auto o = build_view(view::memory, snapshot{off, nullptr, 10}, nullptr);
  CHECK(o.lines[0].find("memory predictor off") == 0);
  REQUIRE(o.tables[0].rows.size() == 2);
  CHECK(o.tables[0].rows[0][column_of(o.tables[0], "FORECAST")].text == "-");
  CHECK(o.tables[0].rows[0][column_of(o.tables[0], "FIT")].text == "-");
  CHECK(o.tables[1].rows.empty());

  // A forecast for a rank the status no longer lists still gets its row, after the others.
  json gone = memory_reply();
  gone["metrics"]["msomni_memory_forecast_bytes"].push_back(
      series({{"job", "demo"}, {"node", "control"}, {"target", "rank-2"}}, 1e9));
  const auto g = build_view(view::memory, snapshot{gone, nullptr, 10}, nullptr).tables[0];
  REQUIRE(g.rows.size() == 3);
  CHECK(g.rows[2][0].text == "rank-2");

  // Keys 7 and m pick it; --once prints it.
  console_state st;
  CHECK(on_key(st, '7', 0) == key_effect::redraw);
  CHECK(st.current == view::memory);
  on_key(st, 'a', 0);
  on_key(st, 'm', 0);
  CHECK(st.current == view::memory);
  const auto text = render_text(snapshot{memory_reply(), nullptr, 10});
  CHECK(text.find("== memory ==") != std::string::npos);
  CHECK(text.find("OVER") != std::string::npos);
  const auto screen = render_screen(st, snapshot{memory_reply(), nullptr, 10}, nullptr, 120, 40);
  CHECK(screen[1].find("[7 memory]") != std::string::npos);
}
