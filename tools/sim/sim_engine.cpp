// msomni-sim engine: trace replay on simulated_clock through scheduler_core and
// step_predictor. Every GPU-second is either allocated-and-busy, allocated-and-idle, or
// free; work a victim loses since its last checkpoint is taken back out of busy.
#include "sim_engine.hpp"

#include "core/clock.hpp"
#include "core/rng.hpp"
#include "scheduler_core.hpp"
#include "sim_state.hpp"
#include "step_predictor.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace msomni::sim {

using namespace msomni::sched;

engine::engine(const sim_options& opt, const trace& tr)
    : opt_(opt),
      core_(make_topology(opt, tr, result_), with_policy(opt)),
      predictor_({opt.step_window, opt.safety_factor, 1u << 16, 16}),
      rng_(rng_stream::derive(opt.seed, "sim.victims")) {
  owner_.assign(core_.gpus().total(), -1);
  result_.gpus = core_.gpus().total();
  result_.format = tr.format;
  build_jobs(tr);
}

double engine::now() const { return std::chrono::duration<double>(clk_.now().time_since_epoch()).count(); }

time_point engine::at(double s) const {
  return time_point{std::chrono::duration_cast<nanos>(std::chrono::duration<double>(s))};
}

void engine::account(double a, double b, double gpus, double& acc) const {
  double lo = std::max(a, t0_), hi = std::min(b, t1_);
  if (hi > lo) acc += (hi - lo) * gpus;
}

void engine::settle(sjob& j) {
  double t = now();
  if (j.held > 0) account(j.last_t, t, j.held, allocated_gpu_s_);
  if (j.draining && j.keep_on_drain == 0) drain_gpu_s_ += (t - j.last_t) * j.held;
  if (j.running && j.rate > 0) {
    double from = std::max(j.last_t, j.stall_until);
    if (t > from) {
      double d = (t - from) * j.rate;
      j.progress_s += d;
      j.remaining_s -= d;
      double idle = j.klass == job_class::critical ? j.cur_idle : 0.0;
      account(from, t, j.held * (1.0 - idle), busy_gpu_s_);
      if (idle > 0) account(from, t, j.held * idle, critical_idle_gpu_s_);
      if (j.klass != job_class::critical && opt_.periodic_checkpoint_s > 0)
        j.last_ckpt_s = std::max(j.last_ckpt_s, std::floor(j.progress_s / opt_.periodic_checkpoint_s) *
                                                    opt_.periodic_checkpoint_s);
    }
  }
  j.last_t = t;
}

void engine::reschedule(sjob& j) {
  if (j.finish_timer) clk_.cancel(j.finish_timer);
  j.finish_timer = 0;
  if (!j.running || j.rate <= 0 || (j.draining && j.keep_on_drain == 0)) return;
  double fin = std::max(now(), j.stall_until) + std::max(0.0, j.remaining_s) / j.rate;
  size_t idx = j.index;
  j.finish_timer = clk_.schedule_at(at(fin), [this, idx] { finish(jobs_[idx]); });
}

void engine::take_gpus(sjob& j, const std::vector<uint32_t>& gpus) {
  for (uint32_t g : gpus) {
    if (owner_[g] >= 0 && owner_[g] != static_cast<int64_t>(j.index)) ++result_.double_allocations;
    owner_[g] = static_cast<int64_t>(j.index);
  }
}

void engine::drop_gpus(sjob& j, size_t keep) {
  for (size_t i = keep; i < j.gpu_list.size(); ++i) owner_[j.gpu_list[i]] = -1;
  j.gpu_list.resize(std::min(keep, j.gpu_list.size()));
  j.held = static_cast<uint32_t>(j.gpu_list.size());
}

void engine::release_local(sjob& j, uint32_t keep_replicas, double lost_s) {
  settle(j);
  j.draining = false;
  if (keep_replicas == 0) {
    drop_gpus(j, 0);
    j.running = false;
    j.rate = 0;
    j.ever_preempted = true;
    active_.erase(j.index);
    if (lost_s > 0) {
      j.progress_s -= lost_s;
      j.remaining_s += lost_s;
      lost_gpu_s_ += lost_s * j.t.gpus;
      // The lost stretch was counted busy as it ran; it produced nothing, so take it back.
      busy_gpu_s_ -= std::min(busy_gpu_s_, lost_s * j.t.gpus);
    }
  } else {
    drop_gpus(j, keep_replicas * j.gpr);
    j.rate = static_cast<double>(keep_replicas) / j.full_replicas;
  }
  reschedule(j);
}

void engine::victim_answers(size_t idx, uint64_t epoch, bool graceful) {
  catch_up();
  sjob& j = jobs_[idx];
  if (j.done || !j.draining || j.epoch != epoch) return;
  settle(j);
  if (graceful) j.last_ckpt_s = j.progress_s;  // the drain's full checkpoint
  double lost = graceful ? 0.0 : std::max(0.0, j.progress_s - j.last_ckpt_s);
  release_local(j, j.keep_on_drain, j.keep_on_drain ? 0.0 : lost);
  apply(core_.released(sim_key(j), epoch, now()));
}

void engine::on_preempt(sjob& j, const command& c) {
  settle(j);
  j.draining = true;
  j.epoch = c.epoch;
  j.keep_on_drain = c.keep_replicas;
  if (c.keep_replicas == 0) {
    ++result_.preemptions;
    // A borrowed run (omni) is outside the run window by rule: the core said so at its start.
    const job_state* s = core_.find(sim_key(j));
    if (j.klass == job_class::regular && opt_.policy == policy_kind::omni && !(s && s->borrowed) &&
        now() - j.run_since < opt_.sched.min_run_window_s)
      ++result_.regular_preempted_in_window;
    j.rate = 0;  // checkpointing, not training
  } else {
    ++result_.shrinks;
  }
  reschedule(j);
  size_t idx = j.index;
  uint64_t epoch = c.epoch;
  if (c.drain_s <= 0) {  // best-effort: taken at once, without a checkpoint
    clk_.schedule_at(clk_.now(), [this, idx, epoch] { victim_answers(idx, epoch, false); });
    return;
  }
  if (rng_.uniform() >= opt_.unresponsive_probability) {
    double ck = opt_.victim_checkpoint_min_s +
                rng_.uniform() * (opt_.victim_checkpoint_max_s - opt_.victim_checkpoint_min_s);
    if (ck < c.drain_s)
      clk_.schedule_after(std::chrono::duration_cast<nanos>(std::chrono::duration<double>(ck)),
                          [this, idx, epoch] { victim_answers(idx, epoch, true); });
  }
  clk_.schedule_after(std::chrono::duration_cast<nanos>(std::chrono::duration<double>(c.drain_s)),
                      [this] { apply(core_.expire(now())); });
}

void engine::on_start(sjob& j, const command& c) {
  settle(j);
  take_gpus(j, c.gpus);
  j.gpu_list = c.gpus;
  j.held = static_cast<uint32_t>(c.gpus.size());
  j.running = true;
  j.draining = false;
  j.guest = false;
  j.epoch = c.epoch;
  j.rate = static_cast<double>(c.replicas) / j.full_replicas;
  j.run_since = now();
  if (j.progress_s > 0) {
    j.stall_until = now() + opt_.restart_s;  // reload the checkpoint first
    restart_gpu_s_ += opt_.restart_s * j.held;
  }
  if (j.first_start < 0) j.first_start = now();
  if (j.klass == job_class::critical && !j.timeline_ready) init_timeline(j);
  active_.insert(j.index);
  reschedule(j);
}

void engine::apply(const std::vector<command>& cmds) {
  for (const command& c : cmds) {
    if (c.kind == command_kind::hold) continue;  // an explanation: nothing to carry out
    sjob& j = jobs_[index_.at(c.job)];
    switch (c.kind) {
      case command_kind::start: on_start(j, c); break;
      case command_kind::resize: {
        settle(j);
        std::vector<uint32_t> added(c.gpus.begin() + std::min(j.gpu_list.size(), c.gpus.size()), c.gpus.end());
        take_gpus(j, added);
        j.gpu_list = c.gpus;
        j.held = static_cast<uint32_t>(c.gpus.size());
        j.rate = static_cast<double>(c.replicas) / j.full_replicas;
        reschedule(j);
        break;
      }
      case command_kind::preempt: on_preempt(j, c); break;
      case command_kind::force_release: {
        ++result_.forced_releases;
        settle(j);
        double lost = c.keep_replicas ? 0.0 : std::max(0.0, j.progress_s - j.last_ckpt_s);
        release_local(j, c.keep_replicas, lost);
        break;
      }
      case command_kind::colocate:
        j.guest = true;
        j.host = index_.at(c.host);
        j.share = c.share;
        j.credited_until = now();
        j.epoch = c.epoch;
        if (j.first_start < 0) j.first_start = now();
        guests_.insert(j.index);
        ++result_.colocations;
        break;
      case command_kind::set_share: j.share = c.share; break;
      case command_kind::evict_guest:
        j.guest = false;
        guests_.erase(j.index);
        break;
      case command_kind::adopted:  // only a restarted live scheduler adopts or requeues
      case command_kind::requeue:
        throw std::logic_error("msomni-sim: the core adopted a job, but nothing rejoins here");
      case command_kind::hold: break;
      case command_kind::reject:
        j.done = true;
        ++result_.rejected;
        result_.rejected_rows.insert(j.trace_pos);
        ++result_.per_class[to_string(j.klass)].rejected;
        --unfinished_;
        break;
    }
  }
}

}  // namespace msomni::sim
