// job_runner_core: msomni job's decisions on the scheduler's commands, the command's end, a
// lost scheduler and in-place resizing, with time as plain values.
#include "job_runner_core.hpp"

#include "scheduler_types.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace msomni::job_runner;
using sched::command_kind;
using std::chrono::seconds;

namespace {

const time_point t0 = time_point{} + seconds(1000);

job_spec spec(bool in_place = false, double reconnect_s = 300) {
  job_spec s;
  s.id = "j1";
  s.gpus = 4;
  s.gpus_per_replica = 1;
  s.run_dir = "/runs/j1";
  s.reconnect_s = reconnect_s;
  s.resize_in_place = in_place;
  return s;
}

msg::job_command command(command_kind k, uint64_t epoch, std::vector<uint32_t> gpus = {}, uint32_t replicas = 0) {
  msg::job_command c;
  c.kind = k;
  c.job = "j1";
  c.epoch = epoch;
  c.gpus = std::move(gpus);
  c.replicas = replicas;
  c.reason = "why";
  return c;
}

template <class T>
std::vector<T> all(const actions& a) {
  std::vector<T> out;
  for (const auto& x : a)
    if (const auto* t = std::get_if<T>(&x)) out.push_back(*t);
  return out;
}

template <class T>
T one(const actions& a) {
  const auto v = all<T>(a);
  REQUIRE(v.size() == 1);
  return v.front();
}

template <class M>
M told(const actions& a) {
  const auto t = one<tell_scheduler>(a);
  REQUIRE(std::holds_alternative<M>(t.message));
  return std::get<M>(t.message);
}

// A core whose command runs on 4 GPUs (4 replicas) at epoch 1.
job_runner_core running(bool in_place = false, double reconnect_s = 300) {
  job_runner_core c(spec(in_place, reconnect_s));
  c.start(t0);
  one<launch>(c.on_command(command(command_kind::start, 1, {0, 1, 2, 3}, 4), t0));
  return c;
}

}  // namespace

TEST_CASE("start submits the job, and says so, quiet until the scheduler decides") {
  job_runner_core c(spec());
  const auto a = c.start(t0);
  const auto s = told<msg::job_submit>(a);
  CHECK(s == msg::job_submit{"j1", job_class::regular, 4, 1, 1, 0});
  CHECK(one<say>(a).text == "submitted (4 GPUs)");
  CHECK(one<say>(c.on_quiet_check()).text.find("no decision yet") == 0);
  c.on_command(command(command_kind::set_share, 1), t0);
  CHECK(c.on_quiet_check().empty());
}

TEST_CASE("a start launches the command on its GPUs, a guest's with its host and share") {
  job_runner_core c(spec());
  c.start(t0);
  auto start = command(command_kind::start, 1, {2, 3}, 2);
  start.resume_step = 40;
  const auto l = one<launch>(c.on_command(start, t0));
  CHECK(l == launch{{2, 3}, 2, 40, "", 0});
  CHECK(c.command_running());

  job_runner_core g(spec());
  g.start(t0);
  auto colocate = command(command_kind::colocate, 1, {5}, 1);
  colocate.host = "crit";
  colocate.share = 0.25;
  const auto a = g.on_command(colocate, t0);
  CHECK(one<launch>(a) == launch{{5}, 1, 0, "crit", 0.25});
  CHECK(one<say>(a).text == "started as a guest of crit on gpus 5 (why)");
}

TEST_CASE("a command of an older epoch is ignored") {
  auto c = running();
  CHECK(c.on_command(command(command_kind::force_release, 0), t0).empty());
  CHECK(c.why() == stopping::no);
}

TEST_CASE("the command ends by itself: job_finished, and the job ends with its code") {
  auto ok = running();
  const auto a = ok.on_command_ended(0, 0, t0);
  CHECK(told<msg::job_finished>(a) == msg::job_finished{"j1", 0, false, 0});
  CHECK(one<finish_job>(a) == finish_job{0, "finished", false});
  CHECK(ok.over());

  auto bad = running();
  const auto b = bad.on_command_ended(2, 12, t0);
  CHECK(one<finish_job>(b).why == "command failed with 2");
  CHECK(told<msg::job_finished>(b) == msg::job_finished{"j1", 2, false, 0});  // failed: no step to resume from
  auto never = running();
  CHECK(one<finish_job>(never.on_command_ended(127, 0, t0)).code == 127);
}

TEST_CASE("a command that stopped by itself (exit 5) ends the job stopped and resumable, not finished") {
  auto c = running();
  const auto a = c.on_command_ended(command_stopped_code, 698, t0);
  // Its GPUs are free again, and the scheduler keeps the step for the resume.
  CHECK(told<msg::job_finished>(a) == msg::job_finished{"j1", command_stopped_code, true, 698});
  const auto f = one<finish_job>(a);
  CHECK(f.code == command_stopped_code);
  CHECK(f.why.find("stopped") == 0);
  CHECK(f.why.find("not finished") != std::string::npos);
  CHECK(f.why.find("checkpoint step 698") != std::string::npos);
  CHECK(c.over());
  // Asked to stop by a drain, the same exit code is a release, as before.
  auto drained = running();
  drained.on_preempt_notice(msg::preempt_notice{"job", 2, 30, "critical"}, 0);
  const auto r = drained.on_command_ended(command_stopped_code, 40, t0);
  CHECK(all<finish_job>(r).empty());
  CHECK_FALSE(drained.over());
}

TEST_CASE("a preempt notice: SIGTERM, then job_released with the checkpoint step once the command ended") {
  auto c = running();
  msg::preempt_notice n{"j1", 2, 30, "critical job"};
  const auto a = c.on_preempt_notice(n, 0);
  CHECK(one<signal_command>(a).sig == stop_signal::terminate);
  CHECK(c.why() == stopping::drain);
  const auto e = c.on_command_ended(143, 17, t0);
  CHECK(told<msg::job_released>(e) == msg::job_released{"j1", 2, 17});
  CHECK(all<launch>(e).empty());
  CHECK_FALSE(c.over());
}

TEST_CASE("a command whose checkpoint step msomni job cannot know is said to be unknown, not step 0") {
  // Preempted: its run directory names no step (an opaque command that writes neither
  // checkpoints/latest nor metrics.jsonl lines with checkpoint_ms).
  auto c = running();
  c.on_preempt_notice(msg::preempt_notice{"j1", 2, 30, "critical job"}, std::nullopt);
  const auto e = c.on_command_ended(143, std::nullopt, t0);
  CHECK(told<msg::job_released>(e) == msg::job_released{"j1", 2, 0});  // the scheduler's "none"
  const std::string released = one<say>(e).text;
  CHECK(released ==
        "released its GPUs (command ended with 143, checkpoint step unknown (/runs/j1 has neither checkpoints/latest "
        "nor a metrics.jsonl line with checkpoint_ms > 0 and its step))");
  CHECK(released.find("checkpoint step 0") == std::string::npos);
  // The step it last saved, when its run directory tells it, is said as such.
  auto known = running();
  known.on_preempt_notice(msg::preempt_notice{"j1", 2, 30, "critical job"}, std::nullopt);
  const auto k = known.on_command_ended(143, 2013, t0);
  CHECK(told<msg::job_released>(k) == msg::job_released{"j1", 2, 2013});
  CHECK(one<say>(k).text == "released its GPUs (command ended with 143, checkpoint step 2013)");
  // Without --run-dir nothing can tell; a stop with a checkpoint says so too.
  job_spec no_dir = spec();
  no_dir.run_dir.clear();
  job_runner_core s(no_dir);
  s.start(t0);
  one<launch>(s.on_command(command(command_kind::start, 1, {0, 1, 2, 3}, 4), t0));
  const auto f = one<finish_job>(s.on_command_ended(command_stopped_code, std::nullopt, t0));
  CHECK(f.why == "stopped (not finished): resumable from checkpoint step unknown (no --run-dir: msomni job cannot see "
                 "its checkpoints); run the same msomni job again to resume");
}

TEST_CASE("a preempt notice with nothing running answers job_released at once") {
  job_runner_core c(spec());
  c.start(t0);
  CHECK(told<msg::job_released>(c.on_preempt_notice({"j1", 3, 30, "x"}, 9)) == msg::job_released{"j1", 3, 9});
}

TEST_CASE("a shrink notice (not in place): SIGTERM, released, and the command starts again on the GPUs it keeps") {
  auto c = running();
  auto shrink = command(command_kind::preempt, 2);
  shrink.keep_replicas = 2;
  shrink.drain_s = 20;
  const auto a = c.on_command(shrink, t0);
  CHECK(one<signal_command>(a).sig == stop_signal::terminate);
  CHECK(c.why() == stopping::shrink);
  const auto e = c.on_command_ended(0, 12, t0);
  CHECK(told<msg::job_released>(e).checkpoint_step == 12);
  CHECK(one<launch>(e) == launch{{0, 1}, 2, 12, "", 0});
  CHECK(c.replicas() == 2);
}

TEST_CASE("force release kills, eviction and requeue stop, each waits to be started again") {
  auto k = running();
  CHECK(one<signal_command>(k.on_command(command(command_kind::force_release, 2), t0)).sig == stop_signal::kill);
  CHECK(one<say>(k.on_command_ended(137, 0, t0)).text == "command stopped (137); waiting to be started again");
  CHECK_FALSE(k.over());
  auto e = running();
  e.on_command(command(command_kind::evict_guest, 2), t0);
  CHECK(e.why() == stopping::evicted);
  auto r = running();
  r.on_command(command(command_kind::requeue, 2), t0);
  CHECK(r.why() == stopping::evicted);
}

TEST_CASE("a start while the last run is ending is taken once it has ended") {
  auto c = running();
  c.on_command(command(command_kind::evict_guest, 2), t0);
  const auto d = c.on_command(command(command_kind::start, 3, {1}, 1), t0);
  CHECK(all<launch>(d).empty());
  CHECK(one<say>(d).text == "starts again once the previous run has ended");
  CHECK(one<launch>(c.on_command_ended(143, 0, t0)).gpus == std::vector<uint32_t>{1});
}

TEST_CASE("reject ends the job with code 3") {
  job_runner_core c(spec());
  c.start(t0);
  CHECK(one<finish_job>(c.on_command(command(command_kind::reject, 1), t0)) == finish_job{3, "rejected: why", false});
}

TEST_CASE("a grow not in place applies at the next start") {
  auto g = running();
  const auto a = g.on_command(command(command_kind::resize, 2, {0, 1, 2, 3, 4, 5}, 6), t0);
  CHECK(all<ask_resize>(a).empty());
  CHECK(all<say>(a).back().text == "grown to 6 replicas: applies at the next start");
  CHECK(g.replicas() == 6);
}

TEST_CASE("in place: a shrink asks msomni-run, follows its status, and releases once it runs smaller") {
  auto c = running(true);
  auto shrink = command(command_kind::preempt, 2);
  shrink.keep_replicas = 2;
  shrink.drain_s = 10;
  CHECK(one<ask_resize>(c.on_command(shrink, t0)) == ask_resize{true, 2, 10});
  CHECK(c.resizing_to() == 2);
  CHECK(one<poll_resize_status>(c.on_resize_accepted()).after == nanos{0});
  one<ask_status>(c.on_resize_poll_due(t0 + seconds(1)));
  CHECK(one<poll_resize_status>(c.on_resize_status(true, R"({"world":4,"phase":"running"})", 0)).after > nanos{0});
  const auto done = c.on_resize_status(true, R"({"world":2,"phase":"running"})", 21);
  CHECK(told<msg::job_released>(done) == msg::job_released{"j1", 2, 21});
  CHECK(one<say>(done).text == "shrunk in place to 2 replicas (gpus 0,1) and released the rest");
  CHECK(c.resizing_to() == 0);
  CHECK(c.why() == stopping::no);  // the command never stopped
}

TEST_CASE("in place: a refused or timed-out resize falls back to the restart") {
  auto c = running(true);
  auto shrink = command(command_kind::preempt, 2);
  shrink.keep_replicas = 1;
  one<ask_resize>(c.on_command(shrink, t0));
  const auto a = c.on_resize_refused("the job is finishing");
  CHECK(one<say>(a).text == "cannot shrink in place (the job is finishing): restarts on 1 replicas");
  CHECK(one<signal_command>(a).sig == stop_signal::terminate);

  auto t = running(true);
  one<ask_resize>(t.on_command(shrink, t0));  // 30 s at least, whatever the drain period
  one<ask_status>(t.on_resize_poll_due(t0 + seconds(30)));
  CHECK(one<say>(t.on_resize_poll_due(t0 + seconds(31))).text.find("did not resize in time") != std::string::npos);
  CHECK(t.why() == stopping::shrink);
}

TEST_CASE("in place: no resize without a running command or with one in progress") {
  job_runner_core idle(spec(true));
  idle.start(t0);
  auto grow = command(command_kind::resize, 1, {0, 1}, 2);
  CHECK(all<say>(idle.on_command(grow, t0)).back().text ==
        "grown to 2 replicas: applies at the next start (not in place: the command is not running)");
  auto busy = running(true);
  one<ask_resize>(busy.on_command(command(command_kind::resize, 2, {0, 1, 2, 3, 4}, 5), t0));
  const auto again = busy.on_command(command(command_kind::resize, 3, {0, 1, 2, 3, 4, 5}, 6), t0);
  CHECK(all<ask_resize>(again).empty());
  CHECK(all<say>(again).back().text.find("another resize is in progress") != std::string::npos);
}

TEST_CASE("the scheduler goes away: the command keeps running, found again it rejoins with its GPUs") {
  auto c = running();
  const auto lost = c.on_scheduler_lost(t0);
  CHECK(one<reconnect_later>(lost).after == nanos{0});
  CHECK(all<signal_command>(lost).empty());
  CHECK_FALSE(c.registered());
  one<find_scheduler>(c.on_reconnect_due(t0 + seconds(5)));
  CHECK(one<reconnect_later>(c.on_scheduler_not_found(std::nullopt)).after == seconds(1));
  CHECK(one<say>(c.on_scheduler_not_found(std::string("bad address"))).text == "cannot reach the scheduler yet: bad address");
  const auto found = c.on_scheduler_found(t0 + seconds(10));
  const auto r = told<msg::job_rejoin>(found);
  CHECK(r.held == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(r.epoch == 1);
  CHECK(r.request.submitted_ago_s == doctest::Approx(10));
  CHECK(one<rewind_metrics>(found).lines == 200);
  CHECK(c.registered());
}

TEST_CASE("found again without a run, the job submits anew with its place in line, a guest's run stops first") {
  job_runner_core c(spec());
  c.start(t0);
  c.on_scheduler_lost(t0 + seconds(2));
  const auto s = told<msg::job_submit>(c.on_scheduler_found(t0 + seconds(7)));
  CHECK(s.submitted_ago_s == doctest::Approx(7));
  CHECK(c.epoch() == 0);

  job_runner_core g(spec());
  g.start(t0);
  g.on_command(command(command_kind::colocate, 1, {5}, 1), t0);
  g.on_scheduler_lost(t0);
  const auto f = g.on_scheduler_found(t0 + seconds(1));
  CHECK(one<signal_command>(f).sig == stop_signal::terminate);
  CHECK_FALSE(g.registered());
  told<msg::job_submit>(g.on_command_ended(143, 0, t0 + seconds(2)));  // submits once the run has ended
  CHECK(g.registered());
}

TEST_CASE("a drained run that ends while the scheduler is away is not released to nobody") {
  auto c = running();
  c.on_preempt_notice({"j1", 2, 30, "x"}, 0);
  c.on_scheduler_lost(t0);
  const auto e = c.on_command_ended(143, 5, t0);
  CHECK(all<tell_scheduler>(e).empty());
  CHECK(one<say>(e).text == "command ended (143, checkpoint step 5) while the scheduler is away");
}

TEST_CASE("the scheduler does not come back within reconnect_s: SIGTERM and the job ends with 1") {
  auto c = running(false, 60);
  c.on_scheduler_lost(t0);
  one<find_scheduler>(c.on_reconnect_due(t0 + seconds(60)));
  const auto a = c.on_reconnect_due(t0 + seconds(61));
  CHECK(one<signal_command>(a).sig == stop_signal::terminate);
  const auto f = one<finish_job>(a);
  CHECK(f.code == 1);
  CHECK(f.why == "the scheduler went away and did not come back within 60 s");
  CHECK(f.grace);  // the command was asked to stop: it gets its grace period
}

TEST_CASE("reconnect_s 0: the job ends at once when the scheduler goes away") {
  auto c = running(false, 0);
  const auto a = c.on_scheduler_lost(t0);
  CHECK(one<finish_job>(a) == finish_job{1, "the scheduler went away", true});
  CHECK(c.over());
}

TEST_CASE("msomni-run's status says it runs on N replicas only when running at that world size") {
  CHECK(runs_on(R"({"world":3,"phase":"running"})", 3));
  CHECK_FALSE(runs_on(R"({"world":3,"phase":"resizing"})", 3));
  CHECK_FALSE(runs_on(R"({"world":2,"phase":"running"})", 3));
  CHECK_FALSE(runs_on("not json", 3));
  CHECK_FALSE(runs_on(R"({"world":"3","phase":"running"})", 3));
}

TEST_CASE("a shrink's force release kills the command and restarts it on the replicas it keeps") {
  auto c = running();
  auto shrink = command(command_kind::preempt, 2);
  shrink.keep_replicas = 2;
  shrink.drain_s = 5;
  c.on_command(shrink, t0);
  auto force = command(command_kind::force_release, 2);
  force.keep_replicas = 2;  // the scheduler keeps the job running on 2 replicas
  CHECK(one<signal_command>(c.on_command(force, t0)).sig == stop_signal::kill);
  CHECK(one<launch>(c.on_command_ended(137, 8, t0)) == launch{{0, 1}, 2, 8, "", 0});
  CHECK(c.command_running());

  auto d = running();  // a drain's force release: it waits to be started again
  one<signal_command>(d.on_command(command(command_kind::force_release, 2), t0));
  CHECK(all<launch>(d.on_command_ended(137, 8, t0)).empty());
}

TEST_CASE("a drain, shrink, grow or eviction before a deferred start launched applies to that start") {
  const auto deferred = [](std::vector<uint32_t> gpus) {
    auto c = running();
    c.on_command(command(command_kind::evict_guest, 2), t0);
    CHECK(all<launch>(c.on_command(command(command_kind::start, 3, gpus, uint32_t(gpus.size())), t0)).empty());
    return c;
  };
  auto drained = deferred({4, 5});  // the scheduler takes that run back: released, nothing starts
  drained.on_preempt_notice({"j1", 4, 30, "x"}, 0);
  auto e = drained.on_command_ended(143, 6, t0);
  CHECK(told<msg::job_released>(e) == msg::job_released{"j1", 4, 6});
  CHECK(all<launch>(e).empty());

  auto shrunk = deferred({4, 5, 6});  // it starts on the replicas kept, released once the last run ended
  auto shrink = command(command_kind::preempt, 4);
  shrink.keep_replicas = 1;
  CHECK(all<signal_command>(shrunk.on_command(shrink, t0)).empty());
  e = shrunk.on_command_ended(143, 6, t0);
  CHECK(told<msg::job_released>(e).epoch == 4);
  CHECK(one<launch>(e).gpus == std::vector<uint32_t>{4});

  auto grown = deferred({4});
  grown.on_command(command(command_kind::resize, 4, {4, 7}, 2), t0);
  // It resumes from the run directory's checkpoint the ended run left (step 6).
  CHECK(one<launch>(grown.on_command_ended(143, 6, t0)) == launch{{4, 7}, 2, 6, "", 0});

  auto evicted = deferred({4});
  evicted.on_command(command(command_kind::requeue, 4), t0);
  CHECK(all<launch>(evicted.on_command_ended(143, 6, t0)).empty());
}

TEST_CASE("in place: a refusal that comes after the command ended changes nothing") {
  auto c = running(true);
  auto shrink = command(command_kind::preempt, 2);
  shrink.keep_replicas = 2;
  one<ask_resize>(c.on_command(shrink, t0));
  auto force = command(command_kind::force_release, 2);
  force.keep_replicas = 2;
  c.on_command(force, t0);
  one<launch>(c.on_command_ended(137, 8, t0));  // restarted on 2 replicas
  CHECK(c.on_resize_refused("msomni-run's status: down").empty());  // the killed run's status request
  CHECK(c.why() == stopping::no);
}

TEST_CASE("in place: a shrink the old way drops a resize in place still in progress") {
  auto c = running(true);
  auto first = command(command_kind::preempt, 2);
  first.keep_replicas = 2;
  one<ask_resize>(c.on_command(first, t0));
  auto second = command(command_kind::preempt, 3);
  second.keep_replicas = 3;
  CHECK(one<signal_command>(c.on_command(second, t0)).sig == stop_signal::terminate);  // another resize is in progress
  CHECK(c.on_resize_status(true, R"({"world":2,"phase":"running"})", 5).empty());  // the first no longer applies
  CHECK(one<launch>(c.on_command_ended(143, 6, t0)) == launch{{0, 1, 2}, 3, 6, "", 0});
}

TEST_CASE("in place: a shrink that fails while the command is being stopped leaves that stop as it is") {
  auto c = running(true);
  auto shrink = command(command_kind::preempt, 2);
  shrink.keep_replicas = 2;
  one<ask_resize>(c.on_command(shrink, t0));
  c.on_command(command(command_kind::requeue, 3), t0);
  CHECK(c.on_resize_refused("msomni-run's status: down").empty());
  CHECK(c.why() == stopping::evicted);
  c.on_command(command(command_kind::start, 4, {5, 6}, 2), t0);
  CHECK(one<launch>(c.on_command_ended(143, 6, t0)).gpus == std::vector<uint32_t>{5, 6});
}

TEST_CASE("in place: a job that rejoins while it shrinks holds only the replicas it keeps") {
  auto c = running(true);
  auto shrink = command(command_kind::preempt, 2);
  shrink.keep_replicas = 2;
  one<ask_resize>(c.on_command(shrink, t0));
  c.on_scheduler_lost(t0);
  const auto r = told<msg::job_rejoin>(c.on_scheduler_found(t0 + seconds(5)));
  CHECK(r.held == std::vector<uint32_t>{0, 1});
  CHECK(r.replicas == 2);
}

TEST_CASE("a grow while a shrink is under way replaces it") {
  auto c = running(true);
  auto shrink = command(command_kind::preempt, 2);
  shrink.keep_replicas = 2;
  one<ask_resize>(c.on_command(shrink, t0));
  CHECK(one<ask_resize>(c.on_command(command(command_kind::resize, 3, {0, 1, 2}, 3), t0)) == ask_resize{false, 3, 0});
  CHECK(c.resizing_to() == 3);

  auto r = running();  // a restart on fewer replicas not yet done starts on the grown set
  shrink.keep_replicas = 2;
  one<signal_command>(r.on_command(shrink, t0));
  r.on_command(command(command_kind::resize, 3, {0, 1, 2, 3, 4}, 5), t0);
  CHECK(one<launch>(r.on_command_ended(143, 6, t0)) == launch{{0, 1, 2, 3, 4}, 5, 6, "", 0});
}

TEST_CASE("an evicted or requeued command that ignores SIGTERM is killed after the grace, not a later run") {
  for (const auto kind : {command_kind::evict_guest, command_kind::requeue}) {
    CAPTURE(int(kind));
    auto c = running();
    const auto a = c.on_command(command(kind, 2), t0);
    CHECK(one<signal_command>(a).sig == stop_signal::terminate);
    const auto k = one<kill_if_still_running>(a);
    CHECK(k.after == command_stop_grace);
    // Still running when the grace is over: SIGKILL, said.
    const auto overdue = c.on_stop_overdue(k.run);
    CHECK(one<signal_command>(overdue).sig == stop_signal::kill);
    CHECK(one<say>(overdue).text == "the command did not stop within 10 s of SIGTERM; killing it");
  }
  // Ended in time: nothing to kill, and a later run is not the one the timer was for.
  auto c = running();
  const auto k = one<kill_if_still_running>(c.on_command(command(command_kind::evict_guest, 2), t0));
  c.on_command_ended(143, 0, t0);
  CHECK(c.on_stop_overdue(k.run).empty());
  one<launch>(c.on_command(command(command_kind::start, 3, {0, 1}, 2), t0));
  CHECK(c.on_stop_overdue(k.run).empty());
  // A drain has the scheduler's force release behind it: no timer of the runner's.
  auto d = running();
  CHECK(all<kill_if_still_running>(d.on_preempt_notice(msg::preempt_notice{"j1", 2, 30, "critical job"}, 0)).empty());
}

TEST_CASE("a start that resumes a stopped job says from which checkpoint step, and the run directory's wins") {
  const auto start_at = [](uint64_t resume_step) {
    auto c = command(command_kind::start, 1, {0, 1, 2, 3}, 4);
    c.resume_step = resume_step;
    return c;
  };
  const auto says = [](const actions& a, const std::string& text) {
    for (const auto& s : all<say>(a))
      if (s.text == text) return true;
    return false;
  };
  job_runner_core same(spec());
  same.start(t0);
  auto a = same.on_command(start_at(698), t0, 698);
  CHECK(one<launch>(a).resume_step == 698);
  CHECK(says(a, "resumes from checkpoint step 698"));

  job_runner_core newer(spec());  // the run directory holds a newer checkpoint than the scheduler knows
  newer.start(t0);
  a = newer.on_command(start_at(698), t0, 700);
  CHECK(one<launch>(a).resume_step == 700);
  CHECK(says(a, "resumes from checkpoint step 700 (the run directory's newest, not the scheduler's 698)"));

  job_runner_core none(spec());  // no checkpoint left: msomni-run starts from scratch
  none.start(t0);
  a = none.on_command(start_at(698), t0, 0);
  CHECK(one<launch>(a).resume_step == 0);
  CHECK(says(a, "the scheduler's resume step is 698, but the run directory has no checkpoint: starts from step 0"));

  job_runner_core forgotten(spec());  // a restarted scheduler knows no stopped step
  forgotten.start(t0);
  a = forgotten.on_command(start_at(0), t0, 698);
  CHECK(one<launch>(a).resume_step == 698);
  CHECK(says(a, "resumes from checkpoint step 698 (the run directory's newest; the scheduler knew none)"));

  job_runner_core fresh(spec());  // nothing to resume from: nothing said about it
  fresh.start(t0);
  a = fresh.on_command(start_at(0), t0, 0);
  CHECK(one<launch>(a).resume_step == 0);
  CHECK(one<say>(a).text.find("started on gpus") == 0);

  job_runner_core no_run_dir(spec());  // without --run-dir the scheduler's step is all there is
  no_run_dir.start(t0);
  a = no_run_dir.on_command(start_at(42), t0, std::nullopt);
  CHECK(one<launch>(a).resume_step == 42);
  CHECK(says(a, "resumes from checkpoint step 42"));
}

TEST_CASE("msomni job interrupted: SIGTERM, then the scheduler hears how the command ended, and the job ends") {
  auto c = running();
  auto a = c.on_interrupted();
  CHECK(one<signal_command>(a).sig == stop_signal::terminate);
  CHECK(one<kill_if_still_running>(a).after == command_stop_grace);
  CHECK(all<finish_job>(a).empty());
  CHECK(c.on_interrupted().empty());  // once
  // The scheduler's commands meanwhile change nothing: the job is ending.
  CHECK(c.on_command(command(command_kind::force_release, 2), t0).empty());
  CHECK(c.on_preempt_notice({"j1", 2, 30, "x"}, 0).empty());
  // msomni-run stopped with a final checkpoint: stopped and resumable.
  a = c.on_command_ended(command_stopped_code, 698, t0);
  CHECK(told<msg::job_finished>(a) == msg::job_finished{"j1", command_stopped_code, true, 698});
  const auto f = one<finish_job>(a);
  CHECK(f.code == command_stopped_code);
  CHECK(f.why.find("resumable from checkpoint step 698") != std::string::npos);
  CHECK(c.over());

  auto preempted = running();  // msomni-run's code for SIGTERM where it reads as a preemption: resumable too
  preempted.on_interrupted();
  a = preempted.on_command_ended(command_preempted_code, 40, t0);
  CHECK(told<msg::job_finished>(a) == msg::job_finished{"j1", 4, true, 40});
  CHECK(one<finish_job>(a).code == 4);

  auto other = running();  // a command that ends another way: failed as reported, the job ends 1
  other.on_interrupted();
  a = other.on_command_ended(143, 0, t0);
  CHECK(told<msg::job_finished>(a) == msg::job_finished{"j1", 143, false, 0});
  CHECK(one<finish_job>(a).code == 1);

  auto by_person = running();  // Ctrl-C on msomni job reaches the command as SIGINT (msomni-run: "stopped")
  a = by_person.on_interrupted(stop_signal::interrupt);
  CHECK(one<signal_command>(a).sig == stop_signal::interrupt);
  bool said_sigint = false;
  for (const auto& s : all<say>(a)) said_sigint |= s.text.rfind("interrupted: stopping the command (SIGINT", 0) == 0;
  CHECK(said_sigint);

  job_runner_core waiting(spec());  // nothing runs yet: it ends at once
  waiting.start(t0);
  a = waiting.on_interrupted();
  CHECK(all<signal_command>(a).empty());
  CHECK(one<finish_job>(a) == finish_job{1, "interrupted", false});
}
