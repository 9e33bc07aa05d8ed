// job_runner (see job_runner.hpp): the child process and the scheduler's commands.
#include "job_runner.hpp"

#include "job_metrics.hpp"

#include "manifest.hpp"
#include "messages/catalog.hpp"
#include "scheduler_types.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

extern char** environ;

namespace msomni::cli {

namespace {

using namespace std::chrono_literals;
using sched::command_kind;
using poll_atom = caf::atom_constant<caf::atom("jrpoll")>;
using quiet_atom = caf::atom_constant<caf::atom("jrquiet")>;
using reconnect_atom = caf::atom_constant<caf::atom("jrrejoin")>;
using resize_poll_atom = caf::atom_constant<caf::atom("jrresize")>;

enum class stopping : uint8_t { no, drain, shrink, evicted, killed };

struct runner_state {
  job_spec spec;
  caf::actor scheduler;  // invalid while the scheduler is away
  std::function<caf::actor()> find_scheduler;
  std::function<std::optional<job_control>(const std::string&)> find_control;
  std::function<void(int, const std::string&)> done;
  // An in-place resize in progress (resize_in_place): msomni-run is asked to run on
  // resize_to replicas; a shrink answers job_released at resize_epoch once it does.
  uint32_t resize_to = 0;
  uint64_t resize_epoch = 0;
  bool resize_is_shrink = false;
  std::chrono::steady_clock::time_point resize_until;
  // False from the scheduler's loss until the one found again has been told about this job
  // (job_rejoin or job_submit); nothing else is sent to a scheduler that does not know it.
  bool registered = true;
  bool guest = false;  // the current run is a guest's
  std::chrono::steady_clock::time_point reconnect_until;
  pid_t child = -1;
  std::vector<uint32_t> gpus;
  uint64_t epoch = 0;
  uint32_t replicas = 0, keep_replicas = 0;
  stopping why = stopping::no;
  bool over = false, heard = false;
  std::optional<msg::job_command> deferred_start;  // a start that came while the last run ended
  metrics_follower metrics{"", ""};  // RUN_DIR/metrics.jsonl
  static inline const char* name = "job_runner";
};

// The step RUN_DIR/checkpoints/latest names (msomni-run's checkpoint root), 0 when none.
uint64_t checkpoint_step(const std::string& run_dir) {
  if (run_dir.empty()) return 0;
  std::ifstream in(std::filesystem::path(run_dir) / "checkpoints" / ckpt::latest_file);
  std::string name;
  std::getline(in, name);
  return ckpt::parse_checkpoint_dir_name(name).value_or(0);
}

uint32_t per_replica(const job_spec& spec) { return spec.gpus_per_replica ? spec.gpus_per_replica : spec.gpus; }

// New step reports from RUN_DIR/metrics.jsonl go to a scheduler that knows this job.
void report_steps(runner_state& st, caf::event_based_actor* self) {
  if (!st.registered) return;
  for (auto& r : st.metrics.poll()) self->send(st.scheduler, std::move(r));
}

std::string join(const std::vector<uint32_t>& v) {
  std::string s;
  for (uint32_t g : v) s += (s.empty() ? "" : ",") + std::to_string(g);
  return s;
}

void say(runner_state& st, const std::string& text) { std::cout << "msomni job " << st.spec.id << ": " << text << std::endl; }

std::string seconds(double s) {
  std::ostringstream o;
  o << s << " s";
  return o.str();
}

std::filesystem::path scratch_of(const runner_state& st) {
  return std::filesystem::path(st.spec.scratch_dir) / st.spec.id;
}

void launch(runner_state& st, uint64_t resume_step, const std::string& host, double share) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  env_strings.push_back("MSOMNI_JOB=" + st.spec.id);
  env_strings.push_back("MSOMNI_JOB_GPUS=" + join(st.gpus));
  env_strings.push_back("MSOMNI_JOB_REPLICAS=" + std::to_string(st.replicas));
  env_strings.push_back("MSOMNI_RESUME_STEP=" + std::to_string(resume_step));
  if (!st.spec.scratch_dir.empty()) {
    const auto dir = scratch_of(st);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) say(st, "cannot create the scratch directory " + dir.string() + ": " + ec.message());
    env_strings.push_back("MSOMNI_SCRATCH_DIR=" + dir.string());
  }
  if (!host.empty()) {
    env_strings.push_back("MSOMNI_JOB_HOST=" + host);
    env_strings.push_back("MSOMNI_JOB_SHARE=" + std::to_string(share));
  }
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = st.spec.command;
  if (st.spec.resize_in_place) args.insert(args.end(), {"--set", "elasticity.replicas=" + std::to_string(st.replicas)});
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // fork + exec rather than posix_spawn: the command gets SIGTERM if this process dies, so a
  // killed `msomni job` leaves no command behind.
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the parent is already gone
    ::execvpe(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  if (pid < 0) say(st, "cannot start " + st.spec.command[0]);
  st.child = pid;
  st.why = stopping::no;
}

// The command has ended: its scratch files go, whatever the reason.
void remove_scratch(runner_state& st) {
  if (st.spec.scratch_dir.empty()) return;
  std::error_code ec;
  const auto removed = std::filesystem::remove_all(scratch_of(st), ec);
  if (ec) say(st, "cannot remove the scratch directory " + scratch_of(st).string() + ": " + ec.message());
  else if (removed > 0) say(st, "removed its scratch directory (" + std::to_string(removed - 1) + " files)");
}

void signal_child(runner_state& st, int sig, stopping why) {
  st.why = why;
  if (st.child > 0) ::kill(st.child, sig);
}

void start_run(runner_state& st, const msg::job_command& c) {
  const bool guest = c.kind == static_cast<uint8_t>(command_kind::colocate);
  st.guest = guest;
  st.gpus = c.gpus;
  st.replicas = c.replicas;
  say(st, std::string(guest ? "started as a guest of " + c.host : "started") + " on gpus " + join(st.gpus) + " (" +
              c.reason + ")");
  launch(st, c.resume_step, guest ? c.host : "", c.share);
}

void finish(caf::stateful_actor<runner_state>* self, int code, const std::string& why) {
  auto& st = self->state;
  if (st.over) return;
  st.over = true;
  say(st, why);
  st.done(code, why);
  self->quit();
}

msg::job_submit submission(const runner_state& st) {
  return {st.spec.id, st.spec.job_class, st.spec.gpus, per_replica(st.spec), st.spec.min_replicas};
}

// Tells a scheduler found again about this job: a run that goes on where it is rejoins; a
// guest's run (its host's forecast is gone with the old instance) is stopped first; a run
// that is ending waits for its end (child_ended calls this again); no run: submit anew.
void register_again(caf::stateful_actor<runner_state>* self) {
  auto& s = self->state;
  if (s.child > 0 && s.why == stopping::no && !s.guest) {
    self->send(s.scheduler, msg::job_rejoin{submission(s), s.gpus, s.replicas, s.epoch});
    s.registered = true;
    s.metrics.rewind(200);
    say(s, "rejoins the scheduler on gpus " + join(s.gpus));
    return;
  }
  if (s.child > 0) {
    if (s.why == stopping::no) {
      say(s, "stops its guest run: a restarted scheduler places guests anew");
      signal_child(s, SIGTERM, stopping::evicted);
    }
    return;
  }
  s.epoch = 0;  // the new instance counts this job's epochs from the start
  self->send(s.scheduler, submission(s));
  s.registered = true;
  say(s, "submitted again to the restarted scheduler");
}

// The world size in msomni-run's status JSON ("world":N), or -1.
int64_t world_of(const std::string& status_json) {
  const auto at = status_json.find("\"world\":");
  if (at == std::string::npos) return -1;
  try {
    return std::stoll(status_json.substr(at + 8));
  } catch (...) {
    return -1;
  }
}

// The in-place resize could not be done: a shrink falls back to a restart on the replicas
// it keeps; a grow applies at the next start.
void resize_failed(caf::stateful_actor<runner_state>* self, const std::string& why) {
  auto& s = self->state;
  const bool shrink = s.resize_is_shrink;
  s.resize_to = 0;
  if (shrink) {
    say(s, "cannot shrink in place (" + why + "): restarts on " + std::to_string(s.keep_replicas) + " replicas");
    signal_child(s, SIGTERM, stopping::shrink);
  } else {
    say(s, "cannot grow in place (" + why + "): applies at the next start");
  }
}

// Asks msomni-run (resize_in_place) to run on `replicas` replicas from its next barrier; the
// answer and then its status are followed by resize_poll_atom. False when there is no
// control endpoint to ask (the caller restarts the command instead); `why` says why not.
bool resize_in_place(caf::stateful_actor<runner_state>* self, uint32_t replicas, bool shrink, double within_s,
                     uint64_t epoch, std::string& why) {
  auto& s = self->state;
  if (!s.spec.resize_in_place || s.spec.run_dir.empty() || !s.find_control) {
    why = "not asked to resize in place";
    return false;
  }
  if (s.child <= 0 || s.resize_to != 0) {
    why = s.child <= 0 ? "the command is not running" : "another resize is in progress";
    return false;
  }
  std::optional<job_control> control;
  try {
    control = s.find_control(s.spec.run_dir);
    if (!control) why = "no control endpoint in " + s.spec.run_dir + "/control.json answers";
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!control) return false;
  s.resize_to = replicas;
  s.resize_is_shrink = shrink;
  s.resize_epoch = epoch;
  s.resize_until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(std::max(within_s, 30.0)));
  const msg::control_request req{control->token, shrink ? "scale-down" : "scale-up", replicas, within_s,
                                 "msomni job " + s.spec.id};
  self->request(control->orchestrator, std::chrono::seconds(30), req)
      .then(
          [self, control](const msg::control_reply& r) {
            if (!r.ok) return resize_failed(self, r.text);
            self->send(self, resize_poll_atom::value, control->orchestrator, control->token);
          },
          [self](caf::error& e) { resize_failed(self, "no answer from msomni-run: " + caf::to_string(e)); });
  return true;
}

// msomni-run runs on the requested replicas: the job's GPUs follow.
void resized(caf::stateful_actor<runner_state>* self) {
  auto& s = self->state;
  const uint32_t n = s.resize_to;
  s.resize_to = 0;
  if (s.resize_is_shrink) {
    s.gpus.resize(std::min<size_t>(s.gpus.size(), size_t{n} * per_replica(s.spec)));
    s.replicas = n;
    if (s.registered)
      self->send(s.scheduler, msg::job_released{s.spec.id, s.resize_epoch, checkpoint_step(s.spec.run_dir)});
    say(s, "shrunk in place to " + std::to_string(n) + " replicas (gpus " + join(s.gpus) + ") and released the rest");
  } else {
    say(s, "grown in place to " + std::to_string(n) + " replicas (gpus " + join(s.gpus) + ")");
  }
}

// The command ended: what that means depends on why it was asked to stop.
void child_ended(caf::stateful_actor<runner_state>* self, int status) {
  auto& st = self->state;
  st.child = -1;
  st.resize_to = 0;
  remove_scratch(st);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  switch (st.why) {
    case stopping::drain:
    case stopping::shrink: {
      const uint64_t step = checkpoint_step(st.spec.run_dir);
      if (!st.registered) {  // the scheduler that asked is gone: queue again at the next one
        say(st, "command ended (" + std::to_string(code) + ", checkpoint step " + std::to_string(step) +
                    ") while the scheduler is away");
        break;
      }
      self->send(st.scheduler, msg::job_released{st.spec.id, st.epoch, step});
      say(st, "released its GPUs (command ended with " + std::to_string(code) + ", checkpoint step " +
                  std::to_string(step) + ")");
      if (st.why == stopping::shrink) {
        st.gpus.resize(std::min<size_t>(st.gpus.size(), size_t{st.keep_replicas} * per_replica(st.spec)));
        st.replicas = st.keep_replicas;
        say(st, "runs on " + std::to_string(st.replicas) + " replicas (gpus " + join(st.gpus) + ")");
        launch(st, step, "", 0);
      }
      break;
    }
    case stopping::evicted:
    case stopping::killed:
      say(st, "command stopped (" + std::to_string(code) + "); waiting to be started again");
      break;
    case stopping::no:
      if (st.registered) self->send(st.scheduler, msg::job_finished{st.spec.id});
      finish(self, code, code == 0 ? "finished" : "command failed with " + std::to_string(code));
      break;
  }
  if (!st.registered && st.scheduler && !st.over) register_again(self);
  if (st.child <= 0 && !st.over && st.deferred_start) {
    const msg::job_command next = *st.deferred_start;
    st.deferred_start.reset();
    start_run(st, next);
  }
}

caf::behavior runner(caf::stateful_actor<runner_state>* self, job_spec spec, job_runner_env env,
                     std::function<void(int, const std::string&)> done) {
  auto& st = self->state;
  st.spec = std::move(spec);
  st.metrics = metrics_follower(st.spec.run_dir, st.spec.id);
  st.scheduler = env.scheduler;
  st.find_scheduler = std::move(env.find_scheduler);
  st.find_control = std::move(env.find_control);
  const caf::actor scheduler = st.scheduler;
  st.done = std::move(done);
  self->monitor(scheduler);
  self->set_down_handler([self](const caf::down_msg& d) {
    auto& s = self->state;
    if (!s.scheduler || d.source != s.scheduler.address()) return;  // an earlier instance
    s.scheduler = caf::actor{};
    s.registered = false;
    s.deferred_start.reset();
    if (s.spec.reconnect_s <= 0) {
      signal_child(s, SIGTERM, stopping::killed);
      return finish(self, 1, "the scheduler went away");
    }
    s.reconnect_until = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(s.spec.reconnect_s));
    say(s, std::string("the scheduler went away: ") + (s.child > 0 ? "the command keeps running; " : "") +
               "waiting up to " + seconds(s.spec.reconnect_s) + " for it to come back");
    self->send(self, reconnect_atom::value);
  });
  self->set_exit_handler([self](const caf::exit_msg& m) {
    auto& s = self->state;
    if (s.child > 0) {
      ::kill(s.child, SIGKILL);
      ::waitpid(s.child, nullptr, 0);
      s.child = -1;
      remove_scratch(s);
    }
    self->quit(m.reason);
  });
  self->send(scheduler, submission(st));
  self->send(self, poll_atom::value);
  self->delayed_send(self, 10s, quiet_atom::value);
  say(st, "submitted (" + std::to_string(st.spec.gpus) + " GPUs)");
  return {
      [self](const msg::job_command& c) {
        auto& s = self->state;
        s.heard = true;
        if (c.epoch < s.epoch) return;  // stale
        s.epoch = c.epoch;
        switch (static_cast<command_kind>(c.kind)) {
          case command_kind::start:
          case command_kind::colocate:
            if (s.child > 0) {  // the previous run is still ending (an eviction needs no answer)
              s.deferred_start = c;
              say(s, "starts again once the previous run has ended");
              return;
            }
            start_run(s, c);
            break;
          case command_kind::preempt:  // a shrink notice: in place, or the command restarts smaller
            s.keep_replicas = c.keep_replicas;
            say(s, "shrink to " + std::to_string(c.keep_replicas) + " replicas within " + seconds(c.drain_s) + " (" + c.reason + ")");
            if (std::string why; !resize_in_place(self, c.keep_replicas, true, c.drain_s, c.epoch, why)) {
              if (s.spec.resize_in_place) say(s, "cannot shrink in place (" + why + "): restarts smaller");
              signal_child(s, SIGTERM, stopping::shrink);
            }
            break;
          case command_kind::force_release:
            say(s, "force release (" + c.reason + ")");
            signal_child(s, SIGKILL, stopping::killed);
            break;
          case command_kind::evict_guest:
            say(s, "evicted as a guest (" + c.reason + ")");
            signal_child(s, SIGTERM, stopping::evicted);
            break;
          case command_kind::resize: {
            const uint32_t from = s.replicas;
            std::string why = "it holds " + std::to_string(from) + " replicas already";
            if (c.replicas > from && resize_in_place(self, c.replicas, false, 0, c.epoch, why)) {
              s.gpus = c.gpus;  // the scheduler gave them: the job's from now on
              s.replicas = c.replicas;
              say(s, "grows from " + std::to_string(from) + " to " + std::to_string(c.replicas) + " replicas in place (" +
                         c.reason + ")");
              break;
            }
            s.gpus = c.gpus;
            s.replicas = c.replicas;
            say(s, "grown to " + std::to_string(c.replicas) + " replicas: applies at the next start (" + c.reason +
                       (s.spec.resize_in_place ? "; not in place: " + why : std::string()) + ")");
            break;
          }
          case command_kind::set_share:
            break;
          case command_kind::reject:
            finish(self, 3, "rejected: " + c.reason);
            break;
          case command_kind::adopted:
            say(s, "keeps gpus " + join(c.gpus) + " (" + c.reason + ")");
            break;
          case command_kind::requeue:
            say(s, "stops and waits in the queue (" + c.reason + ")");
            signal_child(s, SIGTERM, stopping::evicted);
            break;
        }
      },
      [self](const msg::preempt_notice& n) {
        auto& s = self->state;
        s.heard = true;
        if (n.epoch < s.epoch) return;
        s.epoch = n.epoch;
        say(s, "preempted: checkpoint and release within " + seconds(n.drain_s) + " (" + n.reason + ")");
        if (s.child > 0) signal_child(s, SIGTERM, stopping::drain);
        else self->send(s.scheduler, msg::job_released{s.spec.id, n.epoch, checkpoint_step(s.spec.run_dir)});
      },
      [self](reconnect_atom) {
        auto& s = self->state;
        if (s.over || s.scheduler) return;
        if (std::chrono::steady_clock::now() > s.reconnect_until) {
          signal_child(s, SIGTERM, stopping::killed);
          return finish(self, 1, "the scheduler went away and did not come back within " + seconds(s.spec.reconnect_s));
        }
        caf::actor found;
        try {
          if (s.find_scheduler) found = s.find_scheduler();
        } catch (const std::exception& e) {  // e.g. an info file with an unusable address
          say(s, std::string("cannot reach the scheduler yet: ") + e.what());
        }
        if (!found) {
          self->delayed_send(self, 1s, reconnect_atom::value);
          return;
        }
        s.scheduler = found;
        self->monitor(found);
        say(s, "found the scheduler again");
        register_again(self);
      },
      [self](resize_poll_atom, caf::actor orchestrator, std::string token) {
        auto& s = self->state;
        if (s.resize_to == 0 || s.child <= 0 || s.over) return;
        if (std::chrono::steady_clock::now() > s.resize_until) return resize_failed(self, "msomni-run did not resize in time");
        self->request(orchestrator, std::chrono::seconds(10), msg::control_request{token, "status", 0, 0, "msomni job"})
            .then(
                [self, orchestrator, token](const msg::control_reply& r) {
                  auto& st = self->state;
                  if (st.resize_to == 0) return;
                  if (r.ok && world_of(r.json) == static_cast<int64_t>(st.resize_to) &&
                      r.json.find("\"phase\":\"running\"") != std::string::npos)
                    return resized(self);
                  self->delayed_send(self, std::chrono::milliseconds(250), resize_poll_atom::value, orchestrator, token);
                },
                [self](caf::error& e) { resize_failed(self, "msomni-run's status: " + caf::to_string(e)); });
      },
      [self](quiet_atom) {
        if (!self->state.heard)
          say(self->state, "no decision yet: waiting in the scheduler's queue (or the token in the info file is stale)");
      },
      [self](poll_atom) {
        auto& s = self->state;
        report_steps(s, self);
        if (s.child > 0) {
          int status = 0;
          if (::waitpid(s.child, &status, WNOHANG) == s.child) child_ended(self, status);
        }
        if (!s.over) self->delayed_send(self, 100ms, poll_atom::value);
      },
  };
}

}  // namespace

caf::actor spawn_job_runner(caf::actor_system& sys, job_spec spec, job_runner_env env,
                            std::function<void(int, const std::string&)> done) {
  return sys.spawn(runner, std::move(spec), std::move(env), std::move(done));
}

}  // namespace msomni::cli
