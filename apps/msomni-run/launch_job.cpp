// launch_job (see launch_job.hpp). What is here: launching, wiring, progress, journals and
// failure detection (a dead rank stops the job with an event). What is not yet: elastic
// scale-down/up, recovery from the last checkpoint, resume, and msomni-agent (issue 7).
#include "launch_job.hpp"

#include "core/child_process.hpp"
#include "core/log.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "messages/catalog.hpp"
#include "progress_core.hpp"
#include "recovery_core.hpp"
#include "run_journal.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace msomni::apps {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string random_token() {
  unsigned char bytes[16] = {};
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::read(fd, bytes, sizeof bytes) != static_cast<ssize_t>(sizeof bytes))
    throw std::runtime_error("cannot read /dev/urandom for the control token");
  ::close(fd);
  std::string hex;
  for (unsigned char b : bytes) {
    static const char* digits = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

void write_control_file(const fs::path& run_dir, const std::string& address) {
  const auto path = run_dir / "control.json";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path.string());
  ::fchmod(fd, 0600);
  const std::string text = "{\"address\":\"" + address + "\",\"token\":\"" + random_token() + "\"}\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path.string());
}

std::string read_latest(const fs::path& ckpt_dir) {
  std::ifstream in(ckpt_dir / "latest");
  std::string s;
  std::getline(in, s);
  return s;
}

std::string rank_binary(const char* argv0) {
  if (const char* env = std::getenv("MSOMNI_RANK_BINARY")) return env;
  const auto self = fs::read_symlink("/proc/self/exe");
  for (auto candidate : {self.parent_path() / "msomni-rank", self.parent_path().parent_path() / "msomni-rank/msomni-rank"})
    if (fs::exists(candidate)) return candidate.string();
  throw std::runtime_error(std::string("cannot find msomni-rank next to ") + argv0 + " (set MSOMNI_RANK_BINARY)");
}

struct orchestrator_state {
  orchestrator_state(uint64_t total, orchestrator::run_journal& j) : progress(total), journal(j) {}
  orchestrator::progress_core progress;
  orchestrator::run_journal& journal;
  std::atomic<bool> failed{false};
  bool tty = ::isatty(2);
};

// Receives step records (from rank 0) and down messages of the ranks it monitors.
caf::behavior orchestrator_actor(caf::event_based_actor* self, std::shared_ptr<orchestrator_state> st,
                                 std::vector<caf::actor> workers) {
  for (auto& w : workers) self->monitor(w);
  self->set_down_handler([st](caf::down_msg& d) {
    if (d.reason == caf::exit_reason::normal) {
      st->journal.event("rank_left", "a rank process finished and left cleanly");
      return;
    }
    st->failed = true;
    st->journal.event("rank_down", "a rank process died or went silent: " + caf::to_string(d.reason));
  });
  return {[st](const msg::step_record& r) {
    const auto line = st->progress.on_step(r, real_clock{}.now());
    if (!line) return;
    st->journal.metric(*line);
    if (st->tty || r.step % 10 == 0 || st->progress.finished())
      std::cerr << (st->tty ? "\r" : "") << st->progress.progress_line() << (st->tty ? "   " : "\n") << std::flush;
  }};
}

struct generation_outcome {
  int64_t dead = 0;  // ranks that died or failed
};

// One generation of the job: `world` rank processes named g<generation>-rank<r>, wired into
// one ring, monitored by a fresh orchestrator actor, run until they finish or one fails.
// On a failure the rest are stopped (they roll back with the next generation).
generation_outcome run_generation(const config::job_config& cfg, const run_options& opts, const std::string& binary,
                                  const fs::path& ckpt_dir, transport::transport_hub& hub, transport::gateway& gw,
                                  caf::actor_system& sys, std::shared_ptr<orchestrator_state> st, int64_t generation,
                                  int64_t world, bool load) {
  auto name_of = [&](int64_t r) { return "g" + std::to_string(generation) + "-rank" + std::to_string(r); };
  std::vector<std::unique_ptr<child_process>> ranks;
  std::vector<std::string> peers;
  for (int64_t r = 0; r < world; ++r) {
    std::vector<std::string> args{cfg.source_path, "--name", name_of(r), "--control", hub.node().address(),
                                  "--ckpt-dir", ckpt_dir.string()};
    if (load) args.push_back("--resume");
    for (const auto& s : opts.overrides) args.insert(args.end(), {"--set", s});
    ranks.push_back(std::make_unique<child_process>(binary, args));
    auto addr = ranks.back()->read_until("ADDR ", 30s);
    if (!addr) throw std::runtime_error(name_of(r) + " did not start: " + ranks.back()->log);
    peers.push_back("PEER" + addr->substr(4));
  }
  for (auto& r : ranks) {
    for (auto& p : peers) r->write_line(p);
    r->write_line("GO");
  }
  std::vector<caf::actor> workers;
  for (int64_t r = 0; r < world; ++r) {
    if (!hub.node().wait_up(name_of(r), 30s))
      throw std::runtime_error(name_of(r) + " never connected to the control process");
    workers.push_back(gw.remote_actor(name_of(r), "worker"));
  }
  auto orchestrator = sys.spawn(orchestrator_actor, st, workers);
  gw.publish("orchestrator", orchestrator);
  st->journal.event("ranks_started", std::to_string(world) + " ranks (generation " + std::to_string(generation) +
                                          "), control at " + hub.node().address());
  generation_outcome out;
  // Wait for every rank's result, but stop at the first failure: a RESULT fail, a rank that
  // exits without one, or a rank the orchestrator saw go down (a silent one prints nothing).
  std::vector<bool> done(ranks.size(), false);
  size_t finished = 0;
  std::string failure;
  st->failed = false;
  while (finished < ranks.size() && failure.empty()) {
    for (size_t r = 0; r < ranks.size() && failure.empty(); ++r) {
      if (done[r]) continue;
      auto result = ranks[r]->read_until("RESULT ", 100ms);
      if (result) {
        done[r] = true;
        ++finished;
        if (result->rfind("RESULT ok", 0) != 0) failure = name_of(static_cast<int64_t>(r)) + ": " + *result;
      } else if (ranks[r]->exited()) {
        failure = name_of(static_cast<int64_t>(r)) + ": exited without a result";
      }
    }
    if (failure.empty() && st->failed) failure = "a rank went down (see rank_down)";
  }
  if (!failure.empty()) {
    st->journal.event("rank_failed", failure);
    for (auto& other : ranks) other->kill9();
  }
  for (auto& r : ranks) r->close_stdin();
  int64_t failed = 0;
  for (auto& r : ranks) failed += r->wait(30s) != 0;
  // Survivors are stopped by us once one rank fails, so exit codes cannot tell the dead from
  // the stopped: a failure costs one replica (several at once show up as repeated failures).
  if (failed) out.dead = 1;
  caf::anon_send_exit(orchestrator, caf::exit_reason::user_shutdown);
  return out;
}

}  // namespace

int launch_job(const config::job_config& cfg, const run_options& opts, const char* argv0) {
  const fs::path run_dir = opts.run_dir.empty() ? fs::path("runs") / cfg.job.name : fs::path(opts.run_dir);
  fs::create_directories(run_dir);
  const fs::path ckpt_dir = fs::path(cfg.checkpoint.dir).is_absolute() ? fs::path(cfg.checkpoint.dir)
                                                                      : run_dir / cfg.checkpoint.dir;
  if (opts.fresh) {
    fs::remove(run_dir / "metrics.jsonl");
    fs::remove(run_dir / "events.jsonl");
    fs::remove_all(ckpt_dir);
  }
  fs::create_directories(ckpt_dir);
  orchestrator::run_journal journal(run_dir);
  const bool resume = !opts.fresh && fs::exists(ckpt_dir / "latest");
  if (resume)
    journal.event("resume", "ranks load the newest checkpoint under " + ckpt_dir.string() +
                                " that verifies (latest points at " + read_latest(ckpt_dir) + ")");

  caf::actor_system_config caf_cfg;
  register_catalog(caf_cfg);
  caf_cfg.set("scheduler.max-threads", 2);
  caf_cfg.set("logger.console-verbosity", caf::atom("quiet"));
  caf::actor_system sys{caf_cfg};
  transport::ucx_node_options node_opt;
  node_opt.name = "control";
  node_opt.listen_host = cfg.cluster.control_host;
  node_opt.listen_port = static_cast<uint16_t>(cfg.cluster.control_port);
  // elasticity.heartbeat_*: keep-alives on every UCX endpoint; silence this long means down.
  node_opt.keepalive_interval = std::chrono::milliseconds(static_cast<int64_t>(cfg.elasticity.heartbeat_interval_s * 1000));
  node_opt.keepalive_misses = static_cast<int>(cfg.elasticity.heartbeat_misses);
  transport::transport_hub hub(node_opt);
  transport::gateway gw(sys, hub);
  write_control_file(run_dir, hub.node().address());

  const auto binary = rank_binary(argv0);
  auto st = std::make_shared<orchestrator_state>(static_cast<uint64_t>(cfg.training.steps), journal);
  int64_t world = cfg.elasticity.replicas;
  bool load = resume;
  for (int64_t generation = 0;; ++generation) {
    const auto outcome = run_generation(cfg, opts, binary, ckpt_dir, hub, gw, sys, st, generation, world, load);
    if (outcome.dead == 0) {
      journal.event("job_finished", "last step " + std::to_string(st->progress.last_step()) + " on " +
                                        std::to_string(world) + " ranks");
      break;
    }
    const auto d = orchestrator::decide_recovery(world, outcome.dead, generation, cfg.elasticity);
    if (!d.continue_job) {
      journal.event("job_failed", d.reason + "; last step " + std::to_string(st->progress.last_step()));
      if (st->tty) std::cerr << "\n";
      std::cout << "job failed at step " << st->progress.last_step() << ": " << d.reason << "; run directory "
                << run_dir.string() << "\n";
      return 1;
    }
    const auto latest = read_latest(ckpt_dir);
    journal.event("recovery", d.reason + " (" + (latest.empty() ? "no checkpoint yet: from step 0" : latest) + ")");
    std::cerr << (st->tty ? "\n" : "") << "msomni-run: " << d.reason << "\n";
    st->progress.rollback_to(latest.empty() ? 0 : std::stoull(latest.substr(latest.find('-') + 1)));
    world = d.world;
    load = true;
  }
  if (st->tty) std::cerr << "\n";
  std::cout << "job finished at step " << st->progress.last_step() << "; run directory " << run_dir.string() << "\n";
  return 0;
}

}  // namespace msomni::apps
