// The runner's command as a child process (see job_runner_state.hpp): its environment,
// started with a parent-death signal, signals, its scratch directory; and small helpers.
#include "job_runner_state.hpp"

#include "checkpoint_store.hpp"

#include <signal.h>

#include <fstream>
#include <iostream>
#include <sstream>

namespace msomni::cli::runner_detail {

// The step RUN_DIR/checkpoints/latest names (msomni-run's checkpoint root), 0 when none.
uint64_t checkpoint_step(const std::string& run_dir) {
  return run_dir.empty() ? 0 : ckpt::latest_step(std::filesystem::path(run_dir) / "checkpoints").value_or(0);
}

uint32_t per_replica(const job_spec& spec) { return spec.gpus_per_replica ? spec.gpus_per_replica : spec.gpus; }

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

static std::filesystem::path scratch_of(const runner_state& st) {
  return std::filesystem::path(st.spec.scratch_dir) / st.spec.id;
}

// msomni job removes a scratch directory only when it created it: it holds this marker,
// written right after the directory was made.
static constexpr const char* scratch_marker = ".msomni-scratch";

static bool scratch_is_ours(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / scratch_marker, ec);
}

void launch(runner_state& st, uint64_t resume_step, const std::string& host, double share) {
  std::vector<std::string> env_strings;
  env_strings.push_back("MSOMNI_JOB=" + st.spec.id);
  env_strings.push_back("MSOMNI_JOB_GPUS=" + join(st.gpus));
  env_strings.push_back("MSOMNI_JOB_REPLICAS=" + std::to_string(st.replicas));
  env_strings.push_back("MSOMNI_RESUME_STEP=" + std::to_string(resume_step));
  if (!st.spec.scratch_dir.empty()) {
    const auto dir = scratch_of(st);
    std::error_code ec;
    const bool created = std::filesystem::create_directories(dir, ec);
    if (ec) {
      say(st, "cannot create the scratch directory " + dir.string() + ": " + ec.message());
    } else if (created) {
      std::ofstream(dir / scratch_marker) << "scratch directory of msomni job " << st.spec.id << "\n";
    }
    if (!scratch_is_ours(dir))
      say(st, "the scratch directory " + dir.string() + " was not created by msomni job (no " + scratch_marker +
                  "); the command may use it, but it will not be removed");
    env_strings.push_back("MSOMNI_SCRATCH_DIR=" + dir.string());
  }
  if (!host.empty()) {
    env_strings.push_back("MSOMNI_JOB_HOST=" + host);
    env_strings.push_back("MSOMNI_JOB_SHARE=" + std::to_string(share));
  }
  std::vector<std::string> args = st.spec.command;
  if (st.spec.resize_in_place) args.insert(args.end(), {"--set", "elasticity.replicas=" + std::to_string(st.replicas)});
  process::spawn_options o;
  o.env = std::move(env_strings);
  o.search_path = true;
  o.own_process_group = false;  // in our group, as a Ctrl-C at the terminal expects
  o.parent_death_signal = SIGTERM;  // a killed `msomni job` leaves no command behind
  try {
    st.child = process::spawn(args, o);
  } catch (const process::spawn_error& e) {
    say(st, e.what());
    st.start_failed = true;
  }
  st.why = stopping::no;
}

// The command has ended: its scratch files go, whatever the reason.
void remove_scratch(runner_state& st) {
  if (st.spec.scratch_dir.empty() || !scratch_is_ours(scratch_of(st))) return;
  std::error_code ec;
  const auto removed = std::filesystem::remove_all(scratch_of(st), ec);
  if (ec) say(st, "cannot remove the scratch directory " + scratch_of(st).string() + ": " + ec.message());
  else if (removed > 0) say(st, "removed its scratch directory (" + std::to_string(removed - 2) + " files)");  // less itself and its marker
}

void signal_child(runner_state& st, int sig, stopping why) {
  st.why = why;
  st.child.signal(sig);
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

void finish(runner_actor* self, int code, const std::string& why) {
  auto& st = self->state;
  if (st.over) return;
  st.over = true;
  // A command already asked to stop gets its grace period to do so (its SIGTERM handler may
  // checkpoint or stop its own children); only then does the handle's end kill it.
  if (st.child.running() && st.why != stopping::no && !st.child.wait_for(command_stop_grace))
    say(st, "the command did not stop within " + std::to_string(command_stop_grace.count() / 1000) + " s of SIGTERM; killing it");
  say(st, why);
  st.done(code, why);
  self->quit();
}

void keep_replicas_only(runner_state& st, uint32_t replicas) {
  st.gpus.resize(std::min<size_t>(st.gpus.size(), size_t{replicas} * per_replica(st.spec)));
  st.replicas = replicas;
}

std::chrono::steady_clock::time_point steady_after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace msomni::cli::runner_detail
