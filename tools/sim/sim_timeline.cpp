// msomni-sim engine, time half: job set-up, arrivals, reservation-window ticks (the
// critical-job step model, predictor feed, guest accounting), completions, invariants and
// the final numbers.
#include "sim_state.hpp"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace msomni::sim {

using namespace msomni::sched;

namespace {
double uniform_in(rng_stream& r, double lo, double hi) { return lo + r.uniform() * (hi - lo); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}
}  // namespace

topology engine::make_topology(const sim_options& opt, const trace& tr, sim_result& r) {
  if (!opt.node_list_path.empty()) {
    topology t;
    t.node_gpus = read_node_list(opt.node_list_path);
    t.nodes_per_switch = opt.nodes_per_switch;
    r.size_rule = "node list " + opt.node_list_path;
    return t;
  }
  if (opt.gpus > 0) {
    r.size_rule = "--gpus";
    return topology::uniform(opt.gpus, opt.gpus_per_node, opt.nodes_per_switch);
  }
  // Auto size: the trace's mean GPU demand over its submission span at the target load,
  // rounded up to whole nodes, never smaller than its largest job. One rule for every trace.
  double demand = 0, first = 0, last = 0, biggest = 1;
  for (size_t i = 0; i < tr.jobs.size(); ++i) {
    demand += tr.jobs[i].duration_s * tr.jobs[i].gpus;
    if (i == 0) first = tr.jobs[i].submit_s;
    last = tr.jobs[i].submit_s;
    biggest = std::max<double>(biggest, tr.jobs[i].gpus);
  }
  double span = std::max(last - first, 3600.0);
  double g = std::max(biggest, std::ceil(demand / span / opt.target_load));
  uint32_t per = std::max<uint32_t>(1, opt.gpus_per_node);
  uint32_t gpus = static_cast<uint32_t>(std::ceil(g / per)) * per;
  r.size_rule = "auto: ceil(sum(duration*gpus) / submit span / " + std::to_string(opt.target_load) +
                ") to whole nodes";
  return topology::uniform(gpus, per, opt.nodes_per_switch);
}

scheduler_params engine::with_policy(const sim_options& opt) {
  scheduler_params p = opt.sched;
  p.policy = opt.policy;
  return p;
}

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


// A regular job's run window that ended while a critical job waited makes it preemptible:
// the core acts on it as on a drain deadline, before the event at hand (the live shell
// arms a timer at next_window_end_s()).
void engine::catch_up() {
  double w = core_.next_window_end_s();
  if (w >= 0 && w <= now()) apply(core_.expire(now()));
}

void engine::arrive(size_t idx) {
  catch_up();
  sjob& j = jobs_[idx];
  j.last_t = now();
  ++result_.per_class[to_string(j.klass)].submitted;
  job_request r{sim_key(j), j.klass, j.t.gpus, j.gpr, j.min_replicas};
  apply(core_.submit(r, now()));
  check_invariants();
  if (!tick_armed_) {
    tick_armed_ = true;
    window_start_ = now();
    clk_.schedule_after(std::chrono::duration_cast<nanos>(
                            std::chrono::duration<double>(opt_.sched.reservation_window_s)),
                        [this] { tick(); });
  }
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
// A critical job's expected idle share from its drawn timeline: per step, a mean compute of
// step_mean_s (its bubble share idle), a mean data wait of data_wait_share x step_mean_s,
// and its checkpoint/evaluation phases spread over the steps between them.
double expected_idle_share(const sjob& j) {
  const double compute = j.step_mean_s, wait = j.data_wait_share * j.step_mean_s;
  double phase = 0;
  if (j.ckpt_every_steps) phase += j.ckpt_len_s / static_cast<double>(j.ckpt_every_steps);
  if (j.eval_every_steps) phase += j.eval_len_s / static_cast<double>(j.eval_every_steps);
  const double step = compute + wait + phase;
  return step > 0 ? (wait + j.bubble * compute + phase) / step : 0;
}
}  // namespace

// The most busy GPU time the trace allows any policy inside the measurement window. Each
// job that fits the cluster offers work at the rate it has running alone at full size from
// its submission (a critical job busy 1 - its expected idle share of its GPUs): no schedule
// does a job's work sooner than that. A fluid server of the cluster's size does every
// offered GPU-second as soon as capacity allows -- busy at full capacity while a backlog
// waits -- which no real schedule (whole GPUs, gangs, drains, share efficiency) beats.
// Co-location moves work earlier; it creates none.
void engine::demand_ceiling() {
  const double capacity = core_.gpus().total();
  std::vector<std::pair<double, double>> steps;  // (time, change of the offered busy rate)
  for (const sjob& j : jobs_) {
    if (j.t.gpus > capacity || j.t.duration_s <= 0) continue;  // rejected by every policy
    double share = 1;
    if (j.klass == job_class::critical) {
      sjob drawn = j;
      draw_timeline(drawn);
      share = 1 - expected_idle_share(drawn);
    }
    const double rate = j.t.gpus * share;
    steps.emplace_back(j.t.submit_s, rate);
    steps.emplace_back(j.t.submit_s + j.t.duration_s, -rate);
  }
  std::sort(steps.begin(), steps.end());
  double offered = 0, backlog = 0, busy = 0, at = t0_;
  auto serve = [&](double until) {  // from `at` to `until` at the current offered rate
    until = std::min(until, t1_);
    if (until <= at) return;
    double len = until - at;
    if (backlog > 0 && offered < capacity) {  // the backlog drains at capacity - offered
      const double drain = std::min(len, backlog / (capacity - offered));
      busy += capacity * drain;
      backlog -= (capacity - offered) * drain;
      if (backlog < 1e-9) backlog = 0;
      len -= drain;
    }
    if (len > 0) {
      if (backlog > 0 || offered > capacity) {
        busy += capacity * len;
        backlog += (offered - capacity) * len;
      } else {
        busy += offered * len;
      }
    }
    at = until;
  };
  for (const auto& [t, change] : steps) {
    serve(t);
    offered = std::max(0.0, offered + change);
  }
  serve(t1_);
  result_.demand_ceiling_utilization = busy / (capacity * (t1_ - t0_));
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

// Guest progress over [credited_until, until]: it gets its share of the host's GPUs unless
// the host needed more than it actually left idle -- then the host waited for the guest's
// eviction (critical slowdown) and the guest's slice is lost work.
void engine::credit_guest(sjob& g, double until) {
  sjob& h = jobs_[g.host];
  double w = until - g.credited_until;
  g.credited_until = until;
  if (w <= 0) return;
  if (g.share > h.cur_idle + 1e-12) {
    // Guests of one host sit on disjoint GPUs of the same job, so the host waits once for
    // their eviction however many overstayed.
    double from = std::max(until - w, h.shortfall_until);
    if (until > from) {
      double delay = (g.share - h.cur_idle) * (until - from);
      settle(h);
      h.remaining_s += delay;
      h.progress_s -= delay;
      h.colocation_delay_s += delay;
      reschedule(h);
      h.shortfall_until = until;
    }
    lost_gpu_s_ += h.cur_idle * w * g.t.gpus;
    ++result_.guest_shortfalls;
    return;
  }
  double gain = g.share * opt_.share_efficiency * w;
  gain = std::min(gain, g.remaining_s);
  g.progress_s += gain;
  g.remaining_s -= gain;
  g.last_ckpt_s = g.progress_s;  // a guest's state is swapped out at every slice end
  account(until - w, until, g.t.gpus * g.share * opt_.share_efficiency, busy_gpu_s_);
  account(until - w, until, g.t.gpus * g.share * opt_.share_efficiency, guest_busy_gpu_s_);
}

void engine::finish(sjob& j) {
  catch_up();
  j.finish_timer = 0;
  settle(j);
  for (size_t gi : std::vector<size_t>(guests_.begin(), guests_.end()))
    if (jobs_[gi].host == j.index) credit_guest(jobs_[gi], now());
  // A guest that overstayed pushed the host's end back; its rescheduled timer finishes it.
  if (j.remaining_s > 1e-6) return;
  drop_gpus(j, 0);
  active_.erase(j.index);
  complete(j);
  predictor_.forget(sim_key(j));
  apply(core_.finished(sim_key(j), now()));
  check_invariants();
}

void engine::complete(sjob& j) {
  if (j.done) throw std::logic_error("job " + sim_key(j) + " completed twice");
  if (j.finish_timer) clk_.cancel(j.finish_timer);
  j.finish_timer = 0;
  j.running = j.guest = j.draining = false;
  j.done = true;
  j.completion = now();
  guests_.erase(j.index);
  --unfinished_;
}

void engine::tick() {
  catch_up();
  double t = now();
  for (size_t i : active_) settle(jobs_[i]);
  for (size_t gi : std::vector<size_t>(guests_.begin(), guests_.end())) {
    sjob& g = jobs_[gi];
    credit_guest(g, t);
    if (g.remaining_s <= 1e-6) {
      complete(g);
      apply(core_.finished(sim_key(g), t));
    }
  }
  for (size_t i : active_) {
    sjob& j = jobs_[i];
    if (j.klass != job_class::critical || !j.running) continue;
    for (const auto& s : j.window_samples) predictor_.observe(sim_key(j), s);
    j.window_samples.clear();
    // Forecast from what is over, placed relative to now (inside the step in progress),
    // then realise the window.
    double since_last = j.cur_step.step_s - j.carry_s;
    auto f = predictor_.forecast(sim_key(j), opt_.sched.reservation_window_s, since_last);
    core_.set_forecast(sim_key(j), host_forecast_of(f));
    core_.report_guest_delay(sim_key(j), j.colocation_delay_s, t);
    roll_window(j);
  }
  // Headroom left unused: free GPUs while some job waits (value at the window's end held
  // over the window -- a per-window sample, not exact).
  if (core_.pending_count() > 0) account(window_start_, t, core_.gpus().free_count(), free_waiting_gpu_s_);
  apply(core_.window(t));
  check_invariants();
  split_idle(opt_.sched.reservation_window_s);
  if (t >= next_row_) timeline_row();
  window_start_ = t;
  if (unfinished_ > 0)
    clk_.schedule_after(std::chrono::duration_cast<nanos>(
                            std::chrono::duration<double>(opt_.sched.reservation_window_s)),
                        [this] { tick(); });
}

// Where the idle time of the window now starting goes (sim_result::idle_split): a
// diagnostic at the window's start; guests that leave inside the window are not followed.
void engine::split_idle(double w) {
  if (opt_.policy == policy_kind::exclusive) return;
  std::map<size_t, double> guest_gpus;
  for (size_t gi : guests_) guest_gpus[jobs_[gi].host] += jobs_[gi].t.gpus;
  auto& s = idle_split_gpu_s_;
  const auto queued = core_.counts();
  const bool none_waiting = queued.pending_by_class[static_cast<size_t>(job_class::regular)] +
                                queued.pending_by_class[static_cast<size_t>(job_class::best_effort)] ==
                            0;
  for (size_t i : active_) {
    const sjob& h = jobs_[i];
    if (h.klass != job_class::critical || !h.running || h.cur_idle <= 0) continue;
    double idle = h.cur_idle * h.held * w;
    double share = core_.guest_share(sim_key(h));
    if (share <= 0) {
      const auto why = core_.lending_of(sim_key(h));
      if (why == scheduler_core::lending::over_budget) {
        s.over_budget += idle;
      } else if (why == scheduler_core::lending::low_confidence) {
        s.low_confidence += idle;
      } else {
        s.below_threshold += idle;
        if (none_waiting) s.below_threshold_queue_empty += idle;
      }
      continue;
    }
    double lent_on = std::min<double>(guest_gpus[i], h.held);
    s.no_guest += h.cur_idle * (h.held - lent_on) * w;
    if (none_waiting) s.no_guest_queue_empty += h.cur_idle * (h.held - lent_on) * w;
    if (share > h.cur_idle + 1e-12) {
      s.overstay_lost += h.cur_idle * lent_on * w;
      continue;
    }
    s.margin += (h.cur_idle - share) * lent_on * w;
    s.guest_busy += share * opt_.share_efficiency * lent_on * w;
    s.efficiency_loss += share * (1 - opt_.share_efficiency) * lent_on * w;
  }
}

void engine::check_invariants() {
  if (opt_.policy != policy_kind::exclusive && core_.critical_starved_by_lower(now()))
    ++result_.critical_starvation_events;
}

void engine::timeline_row() {
  uint32_t alloc = 0, draining = 0;
  for (size_t i : active_) {
    alloc += jobs_[i].held;
    if (jobs_[i].draining) ++draining;
  }
  std::ostringstream row;
  row << now() << ',' << alloc << ',' << active_.size() << ',' << guests_.size() << ','
      << core_.pending_count() << ',' << draining;
  if (rows_.size() < 1000000) rows_.push_back(row.str());
  next_row_ = now() + opt_.timeline_step_s;
}

sim_result engine::run() {
  for (size_t i = 0; i < jobs_.size(); ++i)
    clk_.schedule_at(at(jobs_[i].t.submit_s), [this, i] { arrive(i); });
  while (clk_.run_next()) ++result_.events;
  sim_result& r = result_;
  r.sim_end_s = now();
  double capacity = static_cast<double>(core_.gpus().total()) * (t1_ - t0_);
  r.allocated_utilization = allocated_gpu_s_ / capacity;
  r.busy_utilization = busy_gpu_s_ / capacity;
  r.free_while_waiting_utilization = free_waiting_gpu_s_ / capacity;
  r.critical_idle_utilization = critical_idle_gpu_s_ / capacity;
  r.guest_busy_utilization = guest_busy_gpu_s_ / capacity;
  const auto& s = idle_split_gpu_s_;
  r.idle_split = {s.guest_busy / capacity,      s.efficiency_loss / capacity, s.overstay_lost / capacity,
                  s.margin / capacity,          s.no_guest / capacity,        s.below_threshold / capacity,
                  s.low_confidence / capacity,  s.over_budget / capacity,     s.no_guest_queue_empty / capacity,
                  s.below_threshold_queue_empty / capacity};
  r.lost_work_gpu_hours = lost_gpu_s_ / 3600.0;
  r.preempted_gpu_hours_lost = (lost_gpu_s_ + drain_gpu_s_ + restart_gpu_s_) / 3600.0;
  r.decisions = core_.decisions_total();
  r.cross_switch = core_.cross_switch_placements();
  r.multi_node = core_.multi_node_placements();
  r.reserve_deferrals = core_.reserve_deferrals();
  r.budget_holds = core_.budget_holds();
  std::map<std::string, std::vector<double>> jct;
  std::vector<double> slow, slow_queue, slow_coloc;
  for (const sjob& j : jobs_) {
    if (j.ever_preempted && !j.done) ++r.unresumed_preempted;
    if (!j.done || j.completion < 0) continue;
    auto& cs = r.per_class[to_string(j.klass)];
    ++cs.completed;
    jct[to_string(j.klass)].push_back(j.completion - j.t.submit_s);
    if (j.klass == job_class::critical) {
      r.critical_jct_s[std::to_string(j.trace_pos)] = j.completion - j.t.submit_s;
      slow.push_back((j.completion - j.t.submit_s) / j.t.duration_s - 1.0);
      slow_queue.push_back((j.first_start - j.t.submit_s) / j.t.duration_s);
      slow_coloc.push_back(j.colocation_delay_s / j.t.duration_s);
      r.critical_queue_wait_s += j.first_start - j.t.submit_s;
      r.critical_colocation_delay_s += j.colocation_delay_s;
    }
  }
  for (auto& [k, v] : jct) {
    r.per_class[k].jct_mean_s = mean(v);
    r.per_class[k].jct_p95_s = percentile(v, 0.95);
  }
  r.critical_slowdown_empty_cluster = mean(slow);
  r.critical_queue_slowdown = mean(slow_queue);
  r.critical_colocation_slowdown = mean(slow_coloc);
  r.critical_colocation_slowdown_max = slow_coloc.empty() ? 0 : *std::max_element(slow_coloc.begin(), slow_coloc.end());
  if (!opt_.timeline_path.empty()) {
    std::ofstream out(opt_.timeline_path);
    if (!out) throw std::runtime_error(opt_.timeline_path + ": cannot write");
    out << "t_s,allocated_gpus,jobs_holding_gpus,guests,pending,draining\n";
    for (const auto& row : rows_) out << row << '\n';
  }
  return r;
}

sim_result run_simulation(const sim_options& opt, const trace& tr) {
  sim_result r = engine(opt, tr).run();
  if (!opt.critical_baseline || opt.critical_only || r.critical_jct_s.empty()) return r;
  // The same critical jobs (same class draws) alone on the same cluster under the same
  // policy: no lower class, so nothing to lend to, preempt or wait for.
  sim_options alone = opt;
  alone.critical_only = true;
  alone.timeline_path.clear();
  alone.skip_rows = r.rejected_rows;  // a job the run turned away is no competitor alone either
  sim_result base = engine(alone, tr).run();
  std::vector<double> slow;
  for (const auto& [id, jct] : r.critical_jct_s) {
    auto it = base.critical_jct_s.find(id);
    if (it != base.critical_jct_s.end() && it->second > 0) slow.push_back(jct / it->second - 1.0);
  }
  r.critical_compared = slow.size();
  r.critical_slowdown = mean(slow);
  r.critical_slowdown_p95 = percentile(slow, 0.95);
  r.critical_slowdown_max = slow.empty() ? 0 : *std::max_element(slow.begin(), slow.end());
  return r;
}

}  // namespace msomni::sim
