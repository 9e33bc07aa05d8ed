// The runner's command as a child process (see job_runner_state.hpp): its environment,
// started with a parent-death signal, signals, its scratch directory, and the job's end.
#include "job_runner_state.hpp"

#include "checkpoint_store.hpp"

#include <signal.h>

#include <fstream>
#include <iostream>

namespace msomni::cli::runner_detail {

std::optional<uint64_t> saved_step(const std::string& run_dir) {
  if (run_dir.empty()) return std::nullopt;
  if (auto step = ckpt::latest_step(std::filesystem::path(run_dir) / "checkpoints")) return step;
  return saved_step_in_metrics(run_dir);
}

void say(const runner_state& st, const std::string& text) {
  std::cout << "msomni job " << st.core.spec().id << ": " << text << std::endl;
}

static std::filesystem::path scratch_of(const runner_state& st) {
  return std::filesystem::path(st.core.spec().scratch_dir) / st.core.spec().id;
}

// msomni job removes a scratch directory only when it created it: it holds this marker,
// written right after the directory was made.
static constexpr const char* scratch_marker = ".msomni-scratch";

static bool scratch_is_ours(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / scratch_marker, ec);
}

void launch(runner_state& st, const job_runner::launch& l) {
  const auto& spec = st.core.spec();
  std::vector<std::string> env_strings;
  env_strings.push_back("MSOMNI_JOB=" + spec.id);
  env_strings.push_back("MSOMNI_JOB_GPUS=" + job_runner::join(l.gpus));
  env_strings.push_back("MSOMNI_JOB_REPLICAS=" + std::to_string(l.replicas));
  env_strings.push_back("MSOMNI_RESUME_STEP=" + std::to_string(l.resume_step));
  if (!spec.scratch_dir.empty()) {
    const auto dir = scratch_of(st);
    std::error_code ec;
    const bool created = std::filesystem::create_directories(dir, ec);
    if (ec) {
      say(st, "cannot create the scratch directory " + dir.string() + ": " + ec.message());
    } else if (created) {
      std::ofstream(dir / scratch_marker) << "scratch directory of msomni job " << spec.id << "\n";
    }
    if (!scratch_is_ours(dir))
      say(st, "the scratch directory " + dir.string() + " was not created by msomni job (no " + scratch_marker +
                  "); the command may use it, but it will not be removed");
    env_strings.push_back("MSOMNI_SCRATCH_DIR=" + dir.string());
  }
  if (!l.host.empty()) {
    env_strings.push_back("MSOMNI_JOB_HOST=" + l.host);
    env_strings.push_back("MSOMNI_JOB_SHARE=" + std::to_string(l.share));
  }
  std::vector<std::string> args = spec.command;
  if (spec.resize_in_place) args.insert(args.end(), {"--set", "elasticity.replicas=" + std::to_string(l.replicas)});
  process::spawn_options o;
  o.env = std::move(env_strings);
  o.search_path = true;
  // A group of its own, signalled as a whole: a shell command's children stop with it, and
  // whatever of the group outlives the command is killed as it ends, so nothing it started is
  // left running on GPUs given back. A Ctrl-C reaches msomni job, which stops the group.
  o.own_process_group = true;
  o.end_group_on_exit = true;
  o.parent_death_signal = SIGTERM;  // a killed `msomni job` leaves no command behind
  try {
    st.child = process::spawn(args, o);
  } catch (const process::spawn_error& e) {
    say(st, e.what());
    st.start_failed = true;
  }
}

// The command has ended: its scratch files go, whatever the reason.
void remove_scratch(runner_state& st) {
  if (st.core.spec().scratch_dir.empty() || !scratch_is_ours(scratch_of(st))) return;
  std::error_code ec;
  const auto removed = std::filesystem::remove_all(scratch_of(st), ec);
  if (ec) say(st, "cannot remove the scratch directory " + scratch_of(st).string() + ": " + ec.message());
  else if (removed > 0) say(st, "removed its scratch directory (" + std::to_string(removed - 2) + " files)");  // less itself and its marker
}

void signal_child(runner_state& st, job_runner::stop_signal sig) {
  st.child.signal_group(sig == job_runner::stop_signal::kill        ? SIGKILL
                        : sig == job_runner::stop_signal::interrupt ? SIGINT
                                                                     : SIGTERM);
}

void finish(runner_actor* self, const job_runner::finish_job& f) {
  auto& st = self->state;
  // A command already asked to stop gets its grace period to do so (its SIGTERM handler may
  // checkpoint or stop its own children); only then does the handle's end kill it.
  if (f.grace && st.child.running() && !st.child.wait_for(command_stop_grace))
    say(st, "the command did not stop within " + std::to_string(command_stop_grace.count() / 1000) + " s of SIGTERM; killing it");
  say(st, f.why);
  const auto end = [self, f] {
    self->state.done(f.code, f.why);
    self->quit();
  };
  if (!st.scheduler || !st.core.registered()) return end();
  // The job_finished just sent (how the command ended: a stopped job's step) must reach the
  // scheduler before this process exits, or the scheduler sees the job go and records it as
  // lost. Messages to one actor arrive in order, so its answer to a status request sent after
  // it says that job_finished was handled. Without an answer the job ends anyway.
  self->request(st.scheduler, job_end_confirm_timeout, msg::scheduler_status_request{"job " + st.core.spec().id + " ends"})
      .then([end](const msg::scheduler_status&) { end(); }, [end](const caf::error&) { end(); });
}

}  // namespace msomni::cli::runner_detail
