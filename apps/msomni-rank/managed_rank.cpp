// run_managed_rank (see managed_rank.hpp): the shell of the rank's elastic protocol. The
// decisions are rank_protocol's (actors/rank_worker/rank_protocol.hpp); this file carries out
// its commands with the real ring, trainer, checkpointer and transport, and prints the rank's
// log lines (JOINED, STEP, CHECKPOINT, STALLED, RESULT).
#include "managed_rank.hpp"

#include "builtin_models.hpp"
#include "checkpoint_store.hpp"
#include "collectives/gradient_communicator.hpp"
#include "collectives/ring_communicator.hpp"
#include "config/config_loader.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "hub/transport_metrics.hpp"
#include "messages/catalog.hpp"
#include "metrics/accounted_actor.hpp"
#include "metrics/metrics_pusher.hpp"
#include "model/model_registry.hpp"
#include "batch_source_factory.hpp"
#include "memory/memory_account.hpp"
#include "memory_features.hpp"
#include "memory_probe.hpp"
#include "pipeline_source.hpp"
#include "fit_inbox.hpp"
#include "plan_inbox.hpp"
#include "rank_checkpointer.hpp"
#include "rank_compute.hpp"
#include "rank_metrics.hpp"
#include "rank_protocol.hpp"
#include "rank_trainer.hpp"
#include "core/log.hpp"
#include "step_line.hpp"
#include "control_link.hpp"
#include "core/control_file.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>

namespace msomni::apps {

using namespace std::chrono_literals;

namespace {

// How often a wait for a plan looks whether the control process is still there.
constexpr auto control_check_interval = 500ms;
// A rank whose control process is gone ([control] store): how often it reads control.json for
// the next leader, how long it waits for that leader's node to answer, and how soon it tries
// the same address again.
constexpr auto follow_poll_interval = 200ms;
constexpr auto follow_connect_wait = 2s;
constexpr auto follow_retry_interval = 5s;

// The model, data and trainer of one rank; rebuilt from scratch when a rollback finds no
// checkpoint (the job restarts from step 0, exactly as a fresh run).
struct training {
  std::unique_ptr<model::trainable_model> model;
  std::unique_ptr<rank_worker::batch_source> data;
  std::unique_ptr<rank_worker::rank_trainer> trainer;
};

class managed_rank {
 public:
  // `metrics`: the rank's series, pushed to the control process; null when metrics are off.
  managed_rank(const config::job_config& cfg, const managed_rank_options& o, caf::actor_system& sys,
               transport::transport_hub& hub, transport::gateway& gw, rank_worker::rank_metrics* metrics)
      : cfg_(cfg), o_(o), sys_(sys), hub_(hub), gw_(gw), metrics_(metrics),
        protocol_(protocol_settings(cfg, o.name)) {
    models::register_builtin_models(registry_);
  }
  ~managed_rank() {
    stop_follow_ = true;
    if (follower_.joinable()) follower_.join();
    if (pusher_) caf::anon_send_exit(pusher_, caf::exit_reason::user_shutdown);
  }

  int run() {
    gw_.publish("worker", sys_.spawn([this](metrics::accounted_actor* self) -> caf::behavior {
      self->account_as("worker", metrics_registry());
      if (auto* r = metrics_registry().get())  // every outcome a series from the start
        for (const char* result : {"taken", "dropped", "stale", "superseded"})
          r->counter("msomni_rank_fit_requests_total", {{"result", result}});
      return {[this](msg::join_world& p) {
                // A rollback supersedes the running epoch at once: collectives of older epochs
                // fail here instead of waiting on live peers that already stalled.
                if (p.source == static_cast<uint8_t>(msg::state_source::checkpoint))
                  hub_.mailbox().abort_below(p.epoch, "epoch " + std::to_string(p.epoch) + ": " + p.reason);
                inbox_.push(std::move(p));
              },
              // From the orchestrator: a coming step the memory forecast says will not fit.
              [this](msg::memory_fit& f) { fits_.push(std::move(f)); },
              // From a leader that took over the job: adopted, or told to leave.
              [this](msg::rejoin_answer& a) { link_.put_answer(std::move(a)); },
              [](const msg::heartbeat&) {}};
    }));
    hub_.node().connect(o_.control);
    if (!hub_.node().wait_up("control", 30s)) throw std::runtime_error("control process at " + o_.control + " never answered");
    const auto orchestrator = gw_.remote_actor("control", "orchestrator");
    link_.attach(orchestrator);
    watch_control();
    if (metrics_) {
      pusher_ = metrics::spawn_metrics_pusher(sys_, metrics_->registry(), orchestrator, {o_.name, o_.name, o_.node});
      std::cout << "METRICS pushed to the control process every " << metrics::push_interval.count() << " ms" << std::endl;
    }

    // Warm-up: build the model and load + verify the newest checkpoint before saying ready.
    // memory.device_memory_gb is the budget of every allocation the model makes (on a GPU the
    // backend lowers it to the device's memory).
    kernels::process_memory_account()->set_budget(static_cast<uint64_t>(cfg_.memory.device_memory_gb * 1e9));
    tr_.model = make_model();  // data and trainer follow with the first plan's slot
    probe_ = std::make_unique<rank_worker::memory_probe>(
        sys_, orchestrator, kernels::process_memory_account(), batch_memory_,
        rank_worker::memory_probe_settings{
            std::chrono::microseconds(std::max<int64_t>(1, std::llround(cfg_.memory.sample_interval_ms * 1000))), 100});
    msg::rank_ready ready{o_.name, o_.node, hub_.node().address(), static_cast<int64_t>(::getpid()), false, 0};
    {
      ckpt::checkpoint_store store(o_.ckpt_dir);
      auto latest = store.load_latest({0});
      if (metrics_) metrics_->on_checkpoint_load(latest.skipped.size());
      if (latest.checkpoint) ready.has_checkpoint = true, ready.checkpoint_step = latest.checkpoint->m.meta.step;
    }
    caf::anon_send(orchestrator, ready);
    // The protocol decides; each command is carried out here and answered with what came of it.
    auto command = protocol_.on_ready_sent(clock_.now());
    for (;;) {
      try {
        if (const auto code = follow_control()) return *code;
        if (const auto code = carry_out(command)) return *code;
      } catch (const rank_worker::checkpoint_give_up& e) {
        command = protocol_.on_checkpoint_give_up(e.what());
      } catch (const transport::collective_error& e) {
        command = protocol_.on_collective_error(steps_done(), e.what(), clock_.now());
      }
    }
  }

 private:
  std::unique_ptr<model::trainable_model> make_model() {
    // training.threads, or this node's cores shared by the ranks its agent may run, less
    // this rank's decode workers.
    const char* slots = std::getenv("MSOMNI_NODE_SLOTS");
    const auto threads = config::threads_per_rank(cfg_, slots ? std::atoll(slots) : 1,
                                                  std::max<int64_t>(1, std::thread::hardware_concurrency()));
    // training.device: this rank's GPU (its local index on the node), or the CPU.
    const auto compute = decide_rank_compute(cfg_, threads, 0);
    cuda_device_ = compute.cuda_device();
    if (metrics_) metrics_->set_compute(cuda_device_, threads);
    batch_memory_ = compute.batch_memory;  // outlives every source and batch built from it
    if (probe_) probe_->use_batch_memory(batch_memory_);
    std::cout << compute.log_line << std::endl;
    return model::create_model(compute.context, registry_, std::filesystem::path(cfg_.source_path).parent_path().string());
  }

  // Data and trainer for `slot` around `model` (a fresh one when null), on the current ring.
  training build(std::unique_ptr<model::trainable_model> model, const rank_worker::data_slot& slot) {
    training t;
    t.model = model ? std::move(model) : make_model();
    t.data = rank_worker::make_batch_source(sys_, cfg_, slot, batch_memory_,
                                            metrics_ ? metrics_->data() : rank_worker::data_watch{});
    std::cout << "DATA " << rank_worker::describe_batch_source(cfg_) << std::endl;
    t.trainer = std::make_unique<rank_worker::rank_trainer>(*t.model, *ring_, *t.data, clock_, rank_worker::settings_from(cfg_));
    t.trainer->set_fit_source([this, model = t.model.get()](uint64_t step) -> std::optional<rank_worker::fit_target> {
      fit_ = fits_.take(step, identity_.rank, identity_.world_size);
      if (!fit_) return std::nullopt;
      // What stays beside the batch, exactly: the memory in use once the model let its last
      // batch's buffers go (weights, gradients, optimizer state, the data stages' buffers).
      model->release_batch_buffers();
      return rank_worker::fit_target{fit_->forecast_bytes,
                                     fit_->budget_bytes,
                                     cfg_.memory.device_memory_gb * 1e9,
                                     static_cast<double>(kernels::process_memory_account()->in_use()),
                                     static_cast<int64_t>(fit_->batch.micro_batch),
                                     static_cast<int64_t>(fit_->batch.seq_len)};
    });
    return t;
  }

  // An NCCL wait of this plan's epoch ends, like the ring's, when a newer plan supersedes the
  // epoch or a member is down (NCCL alone would wait on a dead member forever).
  transport::nccl_options nccl_options_for(const msg::join_world& plan) {
    transport::nccl_options o;
    o.abandoned = [&mailbox = hub_.mailbox(), epoch = plan.epoch, members = plan.members, me = o_.name]() -> std::string {
      if (mailbox.superseded(epoch)) return "a newer membership superseded epoch " + std::to_string(epoch);
      for (const auto& m : members)
        if (m != me && mailbox.is_down(m)) return "member " + m + " is down";
      return "";
    };
    return o;
  }

  // Ends the process if the control process goes away (nobody would send plans any more).
  void watch_control() {
    auto lost = &control_lost_;
    sys_.spawn([lost, orch = link_.orchestrator(), registry = metrics_registry()](metrics::accounted_actor* self) -> caf::behavior {
      self->account_as("control_watch", registry);
      self->monitor(orch);
      self->set_down_handler([self, lost](caf::down_msg&) {
        lost->store(true);
        self->quit();
      });
      return {[](const msg::heartbeat&) {}};
    });
  }

  // The control process is gone for good: it went and this rank follows no leader, or no
  // leader adopted it within the follow limit.
  bool control_gone() const {
    if (!control_lost_) return false;
    if (o_.follow_control.empty()) return true;
    // Lost just now: follow_control() starts the follow limit's clock before the next command.
    return lost_at_ && clock_.now() - *lost_at_ > follow_limit();
  }
  // Three leases and half a minute: a standby takes over within a lease and a heartbeat.
  nanos follow_limit() const { return std::chrono::seconds(leaderless_limit_s(cfg_.control.lease_ttl_s)); }

  // Between commands: with follow_control, notices the control process's loss (training goes
  // on; the follower thread looks for the next leader), and takes the new leader's answer:
  // adopted (reports go there from now on, the kept step records first), or refused (the
  // rank leaves: exit code 0).
  std::optional<int> follow_control() {
    if (o_.follow_control.empty()) return std::nullopt;
    // The transport says so first (the watcher's down message may come later, or not at all
    // for a proxy the transport already let go of).
    if (!control_lost_ && !hub_.node().is_up("control")) control_lost_ = true;
    if (!control_lost_) return std::nullopt;
    {  // what the follower thread tells the next leader: this rank as it is now
      std::lock_guard<std::mutex> lock(follow_mutex_);
      snapshot_ = rejoin_request();
    }
    if (control_lost_ && !lost_at_) {
      lost_at_ = clock_.now();
      link_.lose();
      std::cout << "CONTROL the control process is gone; training on at epoch " << protocol_.epoch() << " from step "
                << steps_done() << " while the next leader is found through " << o_.follow_control << std::endl;
      if (!follower_.joinable()) follower_ = std::thread([this] { follow_loop(); });
    }
    auto answer = link_.take_answer();
    if (!answer) return std::nullopt;
    caf::actor leader;
    {
      std::lock_guard<std::mutex> lock(follow_mutex_);
      leader = asked_;
    }
    if (!answer->adopted) {
      checkpoints_.reset();  // a save in flight is abandoned, never committed
      std::cout << "RESULT ok left: the new leader did not adopt this rank: " << answer->reason << " step=" << steps_done()
                << std::endl;
      return 0;
    }
    if (!leader || !lost_at_) return std::nullopt;  // an answer nobody asked for
    const auto resent = link_.adopt(leader, answer->recorded_step);
    lost_at_.reset();
    control_lost_ = false;
    watch_control();
    probe_->send_to(leader);
    if (metrics_) {
      if (pusher_) caf::anon_send_exit(pusher_, caf::exit_reason::user_shutdown);
      pusher_ = metrics::spawn_metrics_pusher(sys_, metrics_->registry(), leader, {o_.name, o_.name, o_.node});
    }
    std::cout << "CONTROL adopted by the leader at epoch " << protocol_.epoch() << ", step " << steps_done() << "; "
              << resent << " step records after step " << answer->recorded_step << " sent again" << std::endl;
    return std::nullopt;
  }

  msg::rank_rejoin rejoin_request() const {
    const auto phase = protocol_.phase();
    msg::rank_rejoin r;
    r.name = o_.name;
    r.node = o_.node;
    r.address = hub_.node().address();
    r.pid = static_cast<int64_t>(::getpid());
    r.epoch = protocol_.epoch();
    r.members = members_;
    r.rank = protocol_.rank();
    r.steps_done = steps_done();
    // Adoptable: at its epoch with no change under way (training, or done with the last step
    // and waiting to say so), not stalled or at a barrier.
    r.training = phase == rank_worker::rank_phase::training || phase == rank_worker::rank_phase::after_step ||
                 phase == rank_worker::rank_phase::finishing || phase == rank_worker::rank_phase::done;
    return r;
  }

  // The follower thread: while the control process is gone, reads control.json for the next
  // leader's address, connects, and asks it to adopt this rank (again every
  // follow_retry_interval while it does not answer).
  void follow_loop() {
    std::string tried;
    auto tried_at = std::chrono::steady_clock::now() - follow_retry_interval;
    while (!stop_follow_) {
      std::this_thread::sleep_for(follow_poll_interval);
      if (!control_lost_ || stop_follow_) continue;
      const auto file = read_control_file(o_.follow_control);  // replaced whole by each leader
      const auto address = file ? file->address : std::string();
      const auto now = std::chrono::steady_clock::now();
      if (address.empty() || (address == tried && now - tried_at < follow_retry_interval)) continue;
      tried = address;
      tried_at = now;
      if (!hub_.node().is_up("control")) {
        hub_.node().connect(address);
        if (!hub_.node().wait_up("control", follow_connect_wait)) continue;
      }
      const auto leader = gw_.remote_actor("control", "orchestrator");
      msg::rank_rejoin ask;
      {
        std::lock_guard<std::mutex> lock(follow_mutex_);
        asked_ = leader;
        ask = snapshot_;
      }
      caf::anon_send(leader, ask);
      std::cout << ("CONTROL asked the leader at " + address + " to adopt this rank (epoch " + std::to_string(ask.epoch) +
                    ", step " + std::to_string(ask.steps_done) + ")\n")
                << std::flush;
    }
  }

  // rank_left, acknowledged, so the orchestrator knows before the process (and its UCX
  // endpoint) goes. A rank that follows the leader and has none now first waits for one (up
  // to the follow limit), so that its leaving reaches whoever leads the job.
  void tell_leaving(const msg::rank_left& left) {
    while (control_lost_ && !control_gone()) {
      if (follow_control()) break;  // refused: nobody to tell
      std::this_thread::sleep_for(100ms);
    }
    const auto to = link_.orchestrator();
    if (!to || control_lost_) {
      MSOMNI_LOG(warn, "msomni-rank") << "rank_left not sent: no control process leads the job";
      return;
    }
    caf::scoped_actor self{sys_};
    self->request(to, 10s, left).receive([](bool) {}, [&](caf::error&) {
      MSOMNI_LOG(warn, "msomni-rank") << "rank_left was not acknowledged";
    });
  }

  uint64_t steps_done() const { return tr_.trainer ? tr_.trainer->steps_done() : 0; }
  std::shared_ptr<metrics::metrics_registry> metrics_registry() const { return metrics_ ? metrics_->registry() : nullptr; }

  // Carries out one command of the protocol and puts the next one in `command`; the exit code
  // once the rank is done. A collective error or a checkpoint give-up propagates to run().
  std::optional<int> carry_out(rank_worker::rank_command& command) {
    namespace rw = rank_worker;
    if (auto* w = std::get_if<rw::await_plan>(&command)) {
      if (auto p = inbox_.take(w->at_least_epoch, wait_slice(w->until)))
        if (auto next = protocol_.on_plan(*p, clock_.now())) return command = std::move(*next), std::nullopt;
      if (control_gone()) return command = protocol_.on_control_lost(), std::nullopt;
      command = protocol_.on_deadline(clock_.now());  // the same wait again before its deadline
    } else if (auto* a = std::get_if<rw::await_announced_plan>(&command)) {
      if (auto p = inbox_.take_exactly(a->epoch, remaining(a->until)))
        if (auto next = protocol_.on_plan(*p, clock_.now())) return command = std::move(*next), std::nullopt;
      command = protocol_.on_deadline(clock_.now());
    } else if (auto* j = std::get_if<rw::join_as>(&command)) {
      apply(*j);
      command = protocol_.on_joined(steps_done());
    } else if (std::holds_alternative<rw::run_step>(command)) {
      if (control_gone()) return command = protocol_.on_control_lost(), std::nullopt;
      auto& t = *tr_.trainer;
      probe_->step_started(identity_, t.steps_done() + 1);
      try {
        record_ = t.step(protocol_.epoch_to_announce(inbox_.newest_epoch()));
      } catch (...) {
        probe_->step_aborted();
        throw;
      }
      const auto peak = send_memory_sample();
      report_fit(t, peak);
      // Which samples were bad: each rank draws its own, so each says so itself.
      if (auto seen = t.take_bad_samples_seen(); !seen.empty())
        link_.send(msg::bad_samples_seen{identity_.rank, t.steps_done(), std::move(seen)});
      if (metrics_) {
        const auto c = link_.totals();
        metrics_->on_control_link(c.kept, c.dropped, c.overflowed, c.resent);
        metrics_->on_step(record_, t);
        metrics_->on_collective_shared_bytes(ring_ ? ring_->shared_bytes() : 0);
      }
      std::cout << step_line(step_fields(record_)) << std::endl;
      command = protocol_.on_step_done(t.steps_done(), t.last_announced(), clock_.now());
    } else if (auto* s = std::get_if<rw::after_step>(&command)) {
      // The record goes out after the checkpoint call, with the time the rank stood still in
      // it: the scheduler's predictor counts that as an idle phase of the job's GPUs.
      const auto checkpoint_from = clock_.now();
      checkpoints_->after_step(*tr_.trainer, *ring_, s->last_step);
      record_.checkpoint_ns = (clock_.now() - checkpoint_from).count();
      if (s->send_record) link_.send_record(record_);
      report_checkpoint();
      command = protocol_.on_after_step_done();
    } else if (auto* b = std::get_if<rw::barrier_save>(&command)) {
      if (b->send_record) link_.send_record(record_);
      if (b->verified_first) {
        const auto step = checkpoints_->save_verified(*tr_.trainer, *ring_);
        std::cout << "CHECKPOINT verified step " << step << " before epoch " << b->plan.epoch << std::endl;
      } else {
        checkpoints_->after_step(*tr_.trainer, *ring_, b->last_step);
        checkpoints_->finish(*ring_);
        report_checkpoint();
      }
      command = protocol_.on_barrier_saved();
    } else if (std::holds_alternative<rw::final_save>(command)) {
      checkpoints_->finish(*ring_);
      report_checkpoint();
      command = protocol_.on_final_saved();
    } else if (auto* st = std::get_if<rw::report_stall>(&command)) {
      std::cout << "STALLED epoch " << st->stall.epoch << " at step " << st->stall.step << ": " << st->stall.reason
                << std::endl;
      link_.send(st->stall);
      checkpoints_.reset();  // a save in flight is abandoned, never committed
      command = rw::rank_command{st->then};
    } else if (auto* l = std::get_if<rw::leave_job>(&command)) {
      return leave(*l);
    } else if (auto* f = std::get_if<rw::fail_job>(&command)) {
      if (f->as_left) return fail(*f);
      throw std::runtime_error(f->why);  // reported as rank_failed on the way out
    }
    return std::nullopt;
  }

  // How long to block on the inbox: until `until`, but never past the next look at the
  // control process.
  std::chrono::milliseconds wait_slice(time_point until) const {
    return std::min<std::chrono::milliseconds>(remaining(until), control_check_interval);
  }
  std::chrono::milliseconds remaining(time_point until) const {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - clock_.now());
    return std::max(left, std::chrono::milliseconds(0));
  }

  // Every rank, after every step, before rank 0's step record goes out: its exact memory with
  // the step's batch and the upcoming ones the data pipeline holds (memory.horizon_steps steps).
  uint64_t send_memory_sample() {
    const auto& t = *tr_.trainer;
    const auto horizon = static_cast<size_t>(cfg_.memory.horizon_steps);
    const auto accum = t.grad_accum();
    auto upcoming = rank_worker::steps_of(tr_.data->upcoming_features(horizon * static_cast<size_t>(std::max<int64_t>(1, accum))),
                                          accum, horizon);
    const auto sample = probe_->step_ended(t.last_step_batch(), std::move(upcoming));
    if (metrics_) metrics_->on_memory(sample);
    return sample.peak_bytes;
  }

  // What the step did under its memory fit request, to the orchestrator (which journals it so
  // that a resume replays it), and the inbox's counts to the rank's metrics.
  void report_fit(const rank_worker::rank_trainer& t, uint64_t peak_bytes) {
    if (const auto& f = t.last_fit(); f && fit_) {
      msg::memory_fit_done d;
      d.fit = *fit_;
      d.epoch = identity_.epoch;
      d.micro_batches_split = f->micro_batches_split;
      d.parts = f->parts;
      d.keyframe_cuts = f->keyframe_cuts;
      d.fits = f->fits;
      d.peak_bytes = peak_bytes;
      d.detail = f->detail.empty() ? "as is" : f->detail;
      std::cout << "MEMORY_FIT step " << fit_->step << (fit_->replay ? " (replayed)" : "") << ": forecast "
                << fit_->forecast_bytes << " B over budget " << fit_->budget_bytes << " B: " << d.detail << "; peak "
                << peak_bytes << " B" << std::endl;
      link_.send(std::move(d));
    }
    fit_.reset();
    const auto now = fits_.totals();
    if (now.stale > fit_counts_.stale)  // loud: a forecast that came too late protected nothing
      std::cout << "MEMORY_FIT " << (now.stale - fit_counts_.stale)
                << " request(s) came after their step had started (stale; " << now.stale << " in all)" << std::endl;
    auto* r = metrics_registry().get();
    auto bump = [r](const char* result, uint64_t value, uint64_t& seen) {
      if (r && value > seen)
        r->counter("msomni_rank_fit_requests_total", {{"result", result}}).Increment(static_cast<double>(value - seen));
      seen = value;
    };
    bump("taken", now.taken, fit_counts_.taken);
    bump("dropped", now.dropped, fit_counts_.dropped);
    bump("stale", now.stale, fit_counts_.stale);
    bump("superseded", now.superseded, fit_counts_.superseded);
  }

  // A member of the plan of `epoch` up, or a collective error: it did not answer within the
  // protocol's member_wait (it is down), or a newer plan superseded this one meanwhile.
  void wait_for_member(const std::string& peer, uint64_t epoch) {
    const auto limit = protocol_.settings().member_wait;
    const auto until = clock_.now() + limit;
    while (!hub_.node().wait_up(peer, 100ms)) {
      if (const auto newer = inbox_.newest_epoch(); newer > epoch)
        throw transport::collective_error("member " + peer + " is not up and the plan of epoch " + std::to_string(newer) +
                                          " superseded epoch " + std::to_string(epoch));
      if (clock_.now() >= until)
        throw transport::collective_error(
            "member " + peer + " did not answer within " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(limit).count()) +
            " ms (the heartbeat's detection time)");
    }
  }

  static rank_worker::rank_protocol_settings protocol_settings(const config::job_config& cfg, const std::string& name) {
    rank_worker::rank_protocol_settings s{name, static_cast<uint64_t>(cfg.training.steps)};
    s.member_wait = rank_worker::member_wait_for_heartbeat(cfg.elasticity.heartbeat_interval_s, cfg.elasticity.heartbeat_misses);
    return s;
  }

  void apply(const rank_worker::join_as& join) {
    const auto& plan = join.plan;
    const uint32_t rank = join.rank, world = join.world;
    identity_ = {o_.name, plan.epoch, rank, world};
    members_ = plan.members;
    for (size_t i = 0; i < plan.members.size(); ++i) {
      const auto& peer = plan.members[i];
      if (peer != o_.name && peer < o_.name && !hub_.node().is_up(peer)) hub_.node().connect(plan.addresses[i]);
    }
    for (const auto& peer : plan.members)
      if (peer != o_.name) wait_for_member(peer, plan.epoch);
    if (tr_.trainer) tr_.trainer->rebind_gradients(nullptr);
    gradients_ = {};  // the previous epoch's NCCL communicator goes before the new one forms
    ring_ = std::make_unique<transport::ring_communicator>(hub_, plan.members, plan.epoch);
    gradients_ = transport::make_gradient_communicator(*ring_, cuda_device_, nccl_options_for(plan));
    std::cout << "GRADIENTS " << gradients_.description << std::endl;
    const rank_worker::data_slot slot{rank, world, plan.grad_accum, cfg_.training.micro_batch};
    if (!tr_.trainer) {
      tr_ = build(std::move(tr_.model), slot);
    } else {
      tr_.trainer->rebind(*ring_);
      tr_.data->reslot(slot);
    }
    tr_.trainer->rebind_gradients(gradients_.nccl.get());
    tr_.trainer->set_grad_accum(plan.grad_accum);
    std::string how;
    if (join.source == rank_worker::state_from::checkpoint) {
      std::string log;
      uint64_t skipped = 0;
      auto state = rank_worker::rank_checkpointer::load_latest(o_.ckpt_dir, rank, world, rank_worker::all_synthetic(cfg_),
                                                               log, &skipped);
      if (metrics_) metrics_->on_checkpoint_load(skipped);
      std::cout << log;
      if (state) {
        const bool with_data = tr_.trainer->load_state(*state);
        how = "checkpoint step " + std::to_string(tr_.trainer->steps_done()) +
              (with_data ? "" : " (its data position is missing or of an older format: the data order restarts)");
      } else {
        if (tr_.trainer->steps_done() > 0) tr_ = build(nullptr, slot);
        tr_.trainer->rebind_gradients(gradients_.nccl.get());
        tr_.trainer->set_grad_accum(plan.grad_accum);
        how = "a fresh start (no checkpoint yet)";
      }
    } else {
      tr_.trainer->sync_state(*ring_, 0);
      how = "the live state of " + plan.members[0];
    }
    checkpoints_ = std::make_unique<rank_worker::rank_checkpointer>(
        rank_worker::checkpointing_settings{o_.ckpt_dir, static_cast<uint64_t>(cfg_.checkpoint.interval_steps),
                                            static_cast<uint64_t>(cfg_.checkpoint.keep),
                                            static_cast<int>(cfg_.checkpoint.zstd_level),
                                            static_cast<int>(cfg_.checkpoint.zstd_threads), config::config_hash(cfg_),
                                            [link = &link_](const msg::checkpoint_done& d) { link->send_checkpoint(d); },
                                            static_cast<uint64_t>(cfg_.checkpoint.max_consecutive_failures),
                                            nullptr, cfg_.resolved_values},
        rank);
    std::cout << "JOINED epoch " << plan.epoch << " as rank " << rank << " of " << world << " (grad_accum "
              << plan.grad_accum << ") at step " << tr_.trainer->steps_done() << " from " << how << std::endl;
  }

  // One line per decided save in the rank's log: when it was committed and how long after
  // the snapshot was handed to the writer.
  void report_checkpoint() {
    const auto d = checkpoints_->take_decided();
    if (!d) return;
    nlohmann::ordered_json o;
    o["step"] = d->step;
    o["committed"] = d->committed;
    o["decided_after_step"] = d->decided_after_step;
    o["request_to_commit_ms"] = static_cast<double>(d->request_to_commit_ns) / 1e6;
    o["write_ms"] = static_cast<double>(d->write_ns) / 1e6;
    o["commit_ms"] = static_cast<double>(d->commit_ns) / 1e6;
    std::cout << "CHECKPOINT " << json_text(o) << (d->committed ? "" : " " + d->error) << std::endl;
  }

  // Every rank reached the same verdict after the same step (its checkpoints keep failing):
  // the job cannot go on, so the rank leaves with the reason, which ends the job.
  int fail(const rank_worker::fail_job& f) {
    checkpoints_.reset();
    tell_leaving(msg::rank_left{o_.name, f.epoch, steps_done(), f.why, 0, true});
    std::cout << "RESULT fail " << f.why << std::endl;
    return 1;
  }

 public:
  // The rank's own error text, to the orchestrator before the process exits (its exit
  // status alone would not say why). Acknowledged, briefly: the process ends either way.
  void report_failure(const std::string& why) {
    const auto orchestrator = link_.orchestrator();
    if (!orchestrator || control_lost_) return;  // nobody to tell
    caf::scoped_actor self{sys_};
    self->request(orchestrator, 5s, msg::rank_failed{o_.name, protocol_.epoch(), steps_done(), why})
        .receive([](bool) {}, [&](caf::error&) { MSOMNI_LOG(warn, "msomni-rank") << "rank_failed was not acknowledged"; });
  }

 private:

  int leave(const rank_worker::leave_job& l) {
    const std::string& reason = l.reason;
    const uint64_t step = steps_done();
    const uint64_t sum = tr_.trainer ? tr_.trainer->parameter_checksum() : 0;
    checkpoints_.reset();
    tell_leaving(msg::rank_left{o_.name, l.epoch, step, reason, sum});
    char hex[32];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(sum));
    std::cout << "RESULT ok " << reason << " step=" << step << " checksum=" << hex << std::endl;
    return 0;
  }

  const config::job_config& cfg_;
  const managed_rank_options& o_;
  caf::actor_system& sys_;
  transport::transport_hub& hub_;
  transport::gateway& gw_;
  rank_worker::rank_metrics* metrics_;
  caf::actor pusher_;
  model::model_registry registry_;
  rank_worker::plan_inbox inbox_;
  rank_worker::fit_inbox fits_;                 // memory fit requests, by step
  std::optional<msg::memory_fit> fit_;          // the running step's (training thread only)
  rank_worker::fit_inbox::counts fit_counts_;   // as last added to the metrics
  std::atomic<bool> control_lost_{false};
  control_link link_;  // where reports go: the orchestrator while live
  // Following the job's leader (follow_control): since when the control process is gone, the
  // follower thread that asks the next leader to adopt this rank, the orchestrator it asked,
  // and what it tells it.
  std::optional<time_point> lost_at_;
  std::thread follower_;
  std::atomic<bool> stop_follow_{false};
  std::mutex follow_mutex_;
  caf::actor asked_;           // under follow_mutex_
  msg::rank_rejoin snapshot_;  // under follow_mutex_
  real_clock clock_;
  std::unique_ptr<transport::ring_communicator> ring_;
  transport::gradient_communicator gradients_;  // of ring_'s epoch; its NCCL part on CUDA ranks
  int cuda_device_ = -1;                        // this rank's GPU, -1 on the CPU
  std::shared_ptr<std::pmr::memory_resource> batch_memory_;  // before tr_: outlives its batches
  training tr_;
  std::unique_ptr<rank_worker::rank_checkpointer> checkpoints_;
  std::unique_ptr<rank_worker::memory_probe> probe_;  // after batch_memory_: reads its pool
  rank_worker::sample_identity identity_;            // this rank in the current membership
  std::vector<std::string> members_;                 // of the current membership, in ring order
  rank_worker::rank_protocol protocol_;
  msg::step_record record_;  // the last step's, sent by rank 0 after the checkpoint call
};

}  // namespace

namespace {

// A rank that has given its result (its checkpoints committed, its leaving acknowledged or
// given up on) ends within this bound: a teardown that hangs (the transport or a peer not
// letting go) must not keep the process, and the slot or GPU it holds, alive. Normal teardown
// takes well under a second.
constexpr auto teardown_limit = std::chrono::seconds(20);

void bound_teardown(const std::string& name, int code) {
  std::thread([name, code] {
    std::this_thread::sleep_for(teardown_limit);
    const std::string line = "msomni-rank: " + name + " was still tearing down " +
                             std::to_string(teardown_limit.count()) + " s after its result; exiting with " +
                             std::to_string(code) + "\n";
    ::fcntl(2, F_SETFL, ::fcntl(2, F_GETFL) | O_NONBLOCK);  // a full pipe must not hold the exit too
    [[maybe_unused]] const auto written = ::write(2, line.data(), line.size());
    std::_Exit(code);
  }).detach();
}

}  // namespace

int run_managed_rank(const config::job_config& cfg, const managed_rank_options& opts) {
  caf::actor_system_config caf_cfg;
  caf::actor_system sys{configure_process(caf_cfg, rank_worker::rank_actor_threads(cfg), idle_threads::park)};
  try {
    transport::ucx_node_options node_opt;
    node_opt.name = opts.name;
    node_opt.secret = opts.token;
    // Listen where the control process can reach us (loopback when it is on this host).
    node_opt.listen_host = transport::local_address_towards(opts.control.substr(0, opts.control.rfind(':')));
    node_opt.keepalive_interval = std::chrono::milliseconds(static_cast<int64_t>(cfg.elasticity.heartbeat_interval_s * 1000));
    node_opt.keepalive_misses = static_cast<int>(cfg.elasticity.heartbeat_misses);
    transport::transport_hub hub(node_opt);
    transport::gateway gw(sys, hub);
    // cluster.metrics_port on: this rank keeps its series and pushes them to the control process.
    std::unique_ptr<rank_worker::rank_metrics> series;
    metrics::metrics_registry::refresher_handle transport_series;  // before hub and gw go
    if (cfg.cluster.metrics_port != 0) {
      series = std::make_unique<rank_worker::rank_metrics>(std::make_shared<metrics::metrics_registry>());
      transport_series = transport::watch_transport(*series->registry(), hub, gw);
    }
    managed_rank rank(cfg, opts, sys, hub, gw, series.get());
    try {
      const int code = rank.run();
      bound_teardown(opts.name, code);
      return code;
    } catch (const kernels::out_of_memory& e) {
      // Word for word the same on a replacement that meets it again (no name, no time in it), so
      // the orchestrator ends the job instead of replacing ranks that would fail alike.
      const std::string why = std::string(e.what()) + "; raise memory.device_memory_gb (" +
                              json_text(nlohmann::json(cfg.memory.device_memory_gb)) +
                              " GB now) or make the batches or the model smaller";
      rank.report_failure(why);
      bound_teardown(opts.name, 1);
      throw std::runtime_error(why);
    } catch (const std::exception& e) {
      rank.report_failure(e.what());
      bound_teardown(opts.name, 1);
      throw;
    }
  } catch (const std::exception& e) {
    std::cout << "RESULT fail " << e.what() << std::endl;
    MSOMNI_LOG(error, "msomni-rank") << opts.name << ": " << e.what();
    return 1;
  }
}

}  // namespace msomni::apps
