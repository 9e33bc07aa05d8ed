// msomni-sim's workload model: the jobs of the trace slice with their classes and replica
// sizes, and the step timeline of critical jobs (drawn per job, then realised one
// reservation window at a time for the step predictor and the idle share).
#include "sim_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace msomni::sim {

using namespace msomni::sched;

namespace {
double uniform_in(rng_stream& r, double lo, double hi) { return lo + r.uniform() * (hi - lo); }
}  // namespace

void engine::build_jobs(const trace& tr) {
  double fc = 0.2, fr = 0.4;
  bool use_trace = opt_.classes == "trace" || (opt_.classes == "auto" && tr.format == "alibaba-v2023");
  // size[:BIG,SMALL]: a job of at least one node's GPUs is critical with probability BIG
  // (default 0.8), a smaller one with SMALL (0.1); the rest split evenly regular/best-effort.
  bool by_size = opt_.classes.rfind("size", 0) == 0;
  double p_big = 0.8, p_small = 0.1;
  if (by_size) {
    if (opt_.classes != "size" &&
        (std::sscanf(opt_.classes.c_str(), "size:%lf,%lf", &p_big, &p_small) != 2 || p_big < 0 ||
         p_big > 1 || p_small < 0 || p_small > 1))
      throw std::runtime_error("--classes: expected size or size:BIG,SMALL with probabilities in [0, 1]");
  } else if (opt_.classes != "auto" && opt_.classes != "trace") {
    double fb = 0;
    if (std::sscanf(opt_.classes.c_str(), "%lf,%lf,%lf", &fc, &fr, &fb) != 3 || fc < 0 || fr < 0 ||
        fb < 0 || fc + fr + fb <= 0)
      throw std::runtime_error("--classes: expected auto, trace, or C,R,B fractions");
    double sum = fc + fr + fb;
    fc /= sum;
    fr /= sum;
  }
  rng_stream cls = rng_stream::derive(opt_.seed, "sim.classes");
  uint64_t taken = 0;  // jobs of the slice, counted before the critical-only filter
  for (size_t pos = 0; pos < tr.jobs.size(); ++pos) {
    const trace_job& t = tr.jobs[pos];
    if (opt_.window_start_s >= 0 && t.submit_s < opt_.window_start_s) continue;
    if (opt_.window_end_s >= 0 && t.submit_s >= opt_.window_end_s) break;
    if (opt_.max_jobs && taken >= opt_.max_jobs) break;
    ++taken;
    sjob j;
    j.t = t;
    j.index = jobs_.size();
    j.trace_pos = pos;
    double u = cls.uniform();  // drawn for every job so a class rule change shifts nothing else
    if (by_size) {
      fc = t.gpus >= opt_.gpus_per_node ? p_big : p_small;
      fr = (1 - fc) / 2;
    }
    if (use_trace && t.klass) j.klass = *t.klass;
    else j.klass = u < fc ? job_class::critical : (u < fc + fr ? job_class::regular : job_class::best_effort);
    if (opt_.critical_only && (j.klass != job_class::critical || opt_.skip_rows.count(pos))) continue;
    j.gpr = (t.gpus % opt_.gpus_per_node == 0) ? opt_.gpus_per_node : t.gpus;
    j.gpr = std::min(j.gpr, t.gpus);
    j.full_replicas = t.gpus / j.gpr;
    j.min_replicas = std::max<uint32_t>(1, j.full_replicas / 2);
    j.remaining_s = t.duration_s;
    index_[sim_key(j)] = j.index;
    jobs_.push_back(std::move(j));
  }
  if (jobs_.empty()) throw std::runtime_error("no jobs in the selected slice of the trace");
  t0_ = jobs_.front().t.submit_s;
  t1_ = std::max(jobs_.back().t.submit_s, t0_ + 1);
  unfinished_ = jobs_.size();
  result_.jobs = jobs_.size();
  result_.window_s = t1_ - t0_;
  demand_ceiling();
}

void engine::draw_timeline(sjob& j) const {
  rng_stream r = rng_stream::derive(opt_.seed, "sim.timeline", j.index);
  const timeline_model& m = opt_.timeline;
  j.step_mean_s = uniform_in(r, m.step_min_s, m.step_max_s);
  j.bubble = uniform_in(r, m.bubble_min, m.bubble_max);
  j.data_wait_share = uniform_in(r, m.data_wait_min, m.data_wait_max);
  j.ckpt_len_s = uniform_in(r, m.checkpoint_min_s, m.checkpoint_max_s);
  j.eval_len_s = uniform_in(r, m.eval_min_s, m.eval_max_s);
  auto steps_of = [&](double every_s) {
    return every_s > 0 ? std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(every_s / j.step_mean_s))) : 0;
  };
  j.eval_every_steps = steps_of(m.eval_every_s);
  j.ckpt_every_steps = steps_of(m.checkpoint_every_s);
  if (j.eval_every_steps && j.ckpt_every_steps)
    j.ckpt_every_steps = j.eval_every_steps *
                         std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(m.checkpoint_every_s / m.eval_every_s)));
}

void engine::init_timeline(sjob& j) {
  draw_timeline(j);
  j.timeline_ready = true;
  roll_window(j);
}

namespace {
// Idle seconds in [from, to) of a step laid out as data wait, compute, phase.
double idle_in_step(const predict::step_sample& s, double from, double to) {
  auto overlap = [&](double a, double b) { return std::max(0.0, std::min(to, b) - std::max(from, a)); };
  double wait_end = s.data_wait_s, compute_end = s.step_s - s.checkpoint_s;
  return overlap(0, wait_end) + s.bubble_share * overlap(wait_end, compute_end) + overlap(compute_end, s.step_s);
}
}  // namespace

// Consumes one reservation window of the job's step timeline: whole steps are generated as
// needed, a step that straddles the boundary carries over, and a step is queued for the
// predictor only once it is over (no peeking into the step in progress).
void engine::roll_window(sjob& j) {
  const timeline_model& m = opt_.timeline;
  rng_stream r = rng_stream::derive(opt_.seed ^ static_cast<uint64_t>(j.timeline_s * 1000),
                                    "sim.steps", j.index);
  double need = opt_.sched.reservation_window_s, idle = 0;
  for (int guard = 0; need > 1e-9 && guard < 100000; ++guard) {
    if (j.carry_s <= 1e-9) {
      predict::step_sample s;
      double compute = j.step_mean_s * std::max(0.5, 1.0 + m.jitter * r.normal());
      s.data_wait_s = std::max(0.0, j.data_wait_share * j.step_mean_s * (1.0 + m.data_wait_cv * r.normal()));
      ++j.steps_done;
      if (j.ckpt_every_steps && j.steps_done % j.ckpt_every_steps == 0) s.checkpoint_s += j.ckpt_len_s;
      if (j.eval_every_steps && j.steps_done % j.eval_every_steps == 0) s.checkpoint_s += j.eval_len_s;
      s.step_s = compute + s.data_wait_s + s.checkpoint_s;
      s.bubble_share = j.bubble;
      j.cur_step = s;
      j.carry_s = s.step_s;
      j.timeline_s += s.step_s;
    }
    double take = std::min(need, j.carry_s);
    double at = j.cur_step.step_s - j.carry_s;
    idle += idle_in_step(j.cur_step, at, at + take);
    need -= take;
    j.carry_s -= take;
    if (j.carry_s <= 1e-9 && j.window_samples.size() < 4096) j.window_samples.push_back(j.cur_step);
  }
  j.cur_idle = idle / opt_.sched.reservation_window_s;
}

}  // namespace msomni::sim
