// run_managed_rank (see managed_rank.hpp): the shell of the rank's elastic protocol. The
// decisions are rank_protocol's (actors/rank_worker/rank_protocol.hpp); the shell carries out
// its commands with the real ring, trainer, checkpointer and transport, and prints the rank's
// log lines (JOINED, STEP, CHECKPOINT, STALLED, RESULT). managed_rank_state.hpp lists its
// files; this one holds the process: the transport, the "worker" actor, the warm-up and the
// loop that carries out the protocol's commands.
#include "managed_rank_state.hpp"

#include "builtin_models.hpp"
#include "checkpoint_store.hpp"
#include "core/json_text.hpp"
#include "core/log.hpp"
#include "hub/transport_metrics.hpp"
#include "memory/memory_account.hpp"
#include "metrics/accounted_actor.hpp"
#include "metrics/metrics_pusher.hpp"

#include <nlohmann/json.hpp>

#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <iostream>

namespace msomni::apps {

namespace rank_shell {

using namespace std::chrono_literals;

managed_rank::managed_rank(const config::job_config& cfg, const managed_rank_options& o, caf::actor_system& sys,
                           transport::transport_hub& hub, transport::gateway& gw, rank_worker::rank_metrics* metrics)
    : cfg_(cfg), o_(o), sys_(sys), hub_(hub), gw_(gw), metrics_(metrics), protocol_(protocol_settings(cfg, o.name)) {
  models::register_builtin_models(registry_);
}

managed_rank::~managed_rank() {
  stop_follow_ = true;
  if (follower_.joinable()) follower_.join();
  if (pusher_) caf::anon_send_exit(pusher_, caf::exit_reason::user_shutdown);
}

int managed_rank::run() {
  gw_.publish("worker", sys_.spawn([this](metrics::accounted<msg::worker_actor::base>* self) -> msg::worker_actor::behavior_type {
    self->account_as("worker", metrics_registry());
    if (auto* r = metrics_registry().get())  // every outcome a series from the start
      for (const char* result : {"taken", "dropped", "stale", "superseded"})
        r->counter("msomni_rank_fit_requests_total", {{"result", result}});
    return {[this](msg::join_world& p) {
              // A rollback supersedes the running epoch at once: collectives of older epochs
              // fail here instead of waiting on live peers that already stalled.
              if (p.source == msg::state_source::checkpoint)
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
  const auto orchestrator = gw_.remote_actor<msg::orchestrator_actor>("control", "orchestrator");
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

}  // namespace rank_shell

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
    rank_shell::managed_rank rank(cfg, opts, sys, hub, gw, series.get());
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
