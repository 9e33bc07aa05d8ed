// The scheduler core's history of ended jobs: bounded (the oldest go, counted), one entry per
// job, and a stopped job that is submitted again leaves it and starts from its checkpoint step.
#include "ended_jobs.hpp"
#include "scheduler_core.hpp"

#include <doctest/doctest.h>

using namespace msomni::sched;

namespace {

scheduler_core make(size_t ended_capacity = 256, size_t queue = 16) {
  scheduler_params prm;
  prm.ended_jobs_capacity = ended_capacity;
  prm.queue_capacity = queue;
  return scheduler_core(topology::uniform(16, 4, 2), prm);
}

// One replica of `gpus` GPUs: it runs whole or waits.
job_request req(std::string id, uint32_t gpus, job_class c = job_class::regular) { return {std::move(id), c, gpus, gpus, 1}; }

const command* find_cmd(const std::vector<command>& cs, command_kind k, const std::string& job) {
  for (const auto& c : cs)
    if (c.kind == k && c.job == job) return &c;
  return nullptr;
}

ended_job ended(std::string id, job_end end, uint64_t step = 0) {
  return {std::move(id), job_class::regular, {end, end == job_end::failed ? 1 : 0, step}, 0};
}

const job_outcome stopped_at_698{job_end::stopped, 3, 698};

}  // namespace

TEST_CASE("ended jobs: past the capacity the oldest goes and is counted, one entry per job") {
  ended_jobs h(3);
  h.add(ended("a", job_end::finished));
  h.add(ended("b", job_end::stopped, 10));
  h.add(ended("c", job_end::failed));
  CHECK(h.entries().size() == 3);
  CHECK(h.dropped() == 0);
  h.add(ended("d", job_end::lost));
  REQUIRE(h.entries().size() == 3);
  CHECK(h.entries().front().id == "b");
  CHECK(h.dropped() == 1);
  CHECK(h.find("a") == nullptr);
  CHECK(h.count(job_end::finished) == 0);
  CHECK(h.count(job_end::stopped) == 1);
  CHECK(h.count(job_end::failed) == 1);
  CHECK(h.count(job_end::lost) == 1);
  // The same job ending again replaces its entry: nothing is dropped for it.
  h.add(ended("b", job_end::stopped, 20));
  CHECK(h.entries().size() == 3);
  CHECK(h.dropped() == 1);
  CHECK(h.entries().back().outcome.checkpoint_step == 20);
  CHECK(h.count(job_end::stopped) == 1);
  // Capacity 0 keeps nothing and counts each as dropped.
  ended_jobs none(0);
  none.add(ended("x", job_end::finished));
  CHECK(none.entries().empty());
  CHECK(none.dropped() == 1);
}

TEST_CASE("a job's report of its end: stopped with its step, failed for a nonzero code, else finished") {
  const auto stopped = outcome_of(5, true, 698);
  CHECK(stopped.end == job_end::stopped);
  CHECK(stopped.checkpoint_step == 698);
  CHECK(stopped.exit_code == 5);
  const auto failed = outcome_of(2, false, 698);
  CHECK(failed.end == job_end::failed);
  CHECK(failed.checkpoint_step == 0);  // nothing to resume from
  CHECK(outcome_of(0, false, 0).end == job_end::finished);
}

TEST_CASE("ended jobs: only a stopped entry is taken out by a resubmission") {
  ended_jobs h(8);
  h.add(ended("done", job_end::finished));
  h.add(ended("paused", job_end::stopped, 698));
  CHECK_FALSE(h.take_stopped("done"));
  CHECK(h.find("done") != nullptr);
  CHECK_FALSE(h.take_stopped("never"));
  const auto taken = h.take_stopped("paused");
  REQUIRE(taken);
  CHECK(taken->outcome.checkpoint_step == 698);
  CHECK(h.find("paused") == nullptr);
  CHECK(h.count(job_end::stopped) == 0);
  CHECK_FALSE(h.take_stopped("paused"));  // taken once
}

TEST_CASE("a stopped job frees its GPUs, stays listed as stopped, and submitted again starts from its step") {
  auto s = make();
  REQUIRE(find_cmd(s.submit(req("train", 8), 0), command_kind::start, "train"));
  const auto other = s.submit(req("other", 12), 1);  // waits for train's GPUs
  CHECK_FALSE(find_cmd(other, command_kind::start, "other"));
  const auto cs = s.finished("train", 10, stopped_at_698);
  CHECK(find_cmd(cs, command_kind::start, "other"));  // its GPUs went to the next job
  CHECK(s.find("train") == nullptr);
  const ended_job* e = s.ended().find("train");
  REQUIRE(e != nullptr);
  CHECK(e->outcome.end == job_end::stopped);
  CHECK(e->outcome.checkpoint_step == 698);
  CHECK(e->at_s == 10);
  CHECK(e->klass == job_class::regular);
  // A repeat of the report changes nothing.
  CHECK(s.finished("train", 11, {job_end::lost, 0, 0}).empty());
  CHECK(s.ended().find("train")->outcome.end == job_end::stopped);
  // Submitted again: out of the history; it waits, and its start carries the step.
  s.submit(req("train", 8), 20);
  CHECK(s.ended().find("train") == nullptr);
  CHECK(s.ended().count(job_end::stopped) == 0);
  const auto started = s.finished("other", 30);
  const command* start = find_cmd(started, command_kind::start, "train");
  REQUIRE(start != nullptr);
  CHECK(start->resume_step == 698);
  CHECK(s.ended().find("other")->outcome.end == job_end::finished);
  // A job that never stopped starts from scratch.
  auto fresh = make();
  const command* first = find_cmd(fresh.submit(req("new", 4), 0), command_kind::start, "new");
  REQUIRE(first != nullptr);
  CHECK(first->resume_step == 0);
}

TEST_CASE("a resubmission the core refuses leaves the stopped job in the history") {
  auto s = make(256, 1);
  s.submit(req("train", 16), 0);
  s.finished("train", 5, stopped_at_698);
  s.submit(req("big", 16), 6);   // runs
  s.submit(req("wait", 16), 7);  // fills the queue (capacity 1)
  const auto refused = s.submit(req("train", 16), 8);
  REQUIRE(find_cmd(refused, command_kind::reject, "train"));
  REQUIRE(s.ended().find("train") != nullptr);
  CHECK(s.ended().find("train")->outcome.checkpoint_step == 698);
}

TEST_CASE("a waiting job whose msomni job goes away leaves the queue and never starts") {
  auto s = make();
  s.submit(req("big", 16), 0);
  s.submit(req("ghost", 8), 1);  // waits
  REQUIRE(s.find("ghost") != nullptr);
  s.finished("ghost", 2, {job_end::lost, 0, 0});
  CHECK(s.find("ghost") == nullptr);
  CHECK(s.pending_count() == 0);
  CHECK(s.ended().find("ghost")->outcome.end == job_end::lost);
  const auto cs = s.finished("big", 3);
  CHECK_FALSE(find_cmd(cs, command_kind::start, "ghost"));
  CHECK(s.gpus().free_count() == 16);
}

TEST_CASE("the history of ended jobs is bounded by ended_jobs_capacity") {
  auto s = make(2);
  for (int i = 0; i < 5; ++i) {
    const std::string id = "j" + std::to_string(i);
    s.submit(req(id, 1), i);
    s.finished(id, i + 0.5, i % 2 ? job_outcome{job_end::failed, 1, 0} : job_outcome{});
  }
  REQUIRE(s.ended().entries().size() == 2);
  CHECK(s.ended().entries().front().id == "j3");
  CHECK(s.ended().entries().back().id == "j4");
  CHECK(s.ended().dropped() == 3);
  CHECK(s.ended().count(job_end::failed) == 1);
  CHECK(s.ended().count(job_end::finished) == 1);
}
