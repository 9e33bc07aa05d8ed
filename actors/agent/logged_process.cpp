// logged_process (see logged_process.hpp).
#include "logged_process.hpp"

#include "core/stamped_log.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <utility>

namespace msomni::agent {

namespace {

process::spawn_options rank_options(const std::vector<std::string>& env, bool ignore_stop_signals, bool outlive) {
  process::spawn_options o;
  o.env = env;
  // OpenMP's idle threads sleep instead of spinning, unless whoever started us chose: between
  // a rank's parallel loops its OpenMP threads would otherwise spin on the cores OpenBLAS's
  // GEMM threads need next (measured with one rank of 2 threads at d_model 256 on 2 cores:
  // 186-208 ms a step spinning, 64-65 ms passive).
  if (!std::getenv("OMP_WAIT_POLICY")) o.env.push_back("OMP_WAIT_POLICY=passive");
  if (ignore_stop_signals) o.ignored_signals = {SIGTERM, SIGINT};
  o.in = process::stream::null();
  o.out = process::stream::pipe();
  o.err = process::stream::same_as_stdout();
  // A group of its own: a signal to the agent's group (a Ctrl-C at its terminal, `msomni job`
  // stopping its command's group) reaches the agent and the control process, which stop the
  // ranks at a barrier with a final checkpoint, instead of killing them mid-step. A rank still
  // ends with the agent (parent_death_signal) and when the agent lets it go.
  o.own_process_group = true;
  o.parent_death_signal = outlive ? 0 : SIGKILL;
  return o;
}

// The copier of an outliving rank's output: a process of its own, so that it outlives the
// agent with the rank; it ends at the pipe's EOF (the rank and all its children ended), and
// stop signals to a group or a terminal do not cut the rank's last words short.
process::spawn_options logger_options(int rank_output) {
  process::spawn_options o;
  o.in = process::stream::descriptor(rank_output);
  o.out = process::stream::null();
  o.err = process::stream::null();
  o.own_process_group = true;
  o.ignored_signals = {SIGTERM, SIGINT, SIGHUP};
  return o;
}

constexpr auto logger_drain_wait = std::chrono::seconds(2);

int open_log(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw process::spawn_error("cannot open " + path + ": " + std::strerror(errno));
  return fd;
}

}  // namespace

logged_process::logged_process(const std::string& binary, const std::vector<std::string>& args,
                               const std::string& log_path, const std::vector<std::string>& env,
                               const std::string& about, bool ignore_stop_signals, const std::string& outliving_logger)
    : log_path_(log_path), log_fd_(open_log(log_path)) {
  const bool outlive = !outliving_logger.empty();
  try {
    child_ = process::spawn(binary, args, rank_options(env, ignore_stop_signals, outlive));
  } catch (...) {
    ::close(log_fd_);
    throw;
  }
  append_whole(log_fd_, "---- " + utc_timestamp() + " msomni-rank started: pid " + std::to_string(child_.pid()) +
                         (about.empty() ? "" : ", " + about) + (outlive ? ", outlives its agent" : "") + " ----\n");
  if (!outlive) {
    copier_ = std::thread([in = child_.stdout_fd(), out = log_fd_] { copy_stamped(in, out); });
    return;
  }
  ::close(std::exchange(log_fd_, -1));  // the logger appends from now on
  try {
    logger_ = process::spawn(outliving_logger, {"--stamp-log", log_path}, logger_options(child_.stdout_fd()));
  } catch (...) {
    child_.close_stdout();  // the rank's writes fail; it is killed with this object
    throw;
  }
  child_.close_stdout();  // the logger holds the read end alone: EOF when the rank ends
}

logged_process::~logged_process() {
  kill9();
  child_.wait();
  finish_log();
}

void logged_process::release() {
  child_.release();
  logger_.release();
}

void logged_process::finish_log() {
  if (copier_.joinable()) copier_.join();  // EOF: the process and everything holding its pipe ended
  if (logger_.running() && !logger_.wait_for(logger_drain_wait)) logger_.signal(SIGKILL), logger_.wait();
  if (log_fd_ >= 0) ::close(log_fd_);
  log_fd_ = -1;
}

std::optional<int> logged_process::poll_exit() {
  const auto status = child_.poll();
  if (!status) return std::nullopt;
  finish_log();  // its last words are in the log before anyone reads its tail
  return status->signal ? -status->signal : status->code;
}

void logged_process::kill9() { child_.signal(SIGKILL); }  // nothing once reaped: the pid may be someone else's

std::string logged_process::log_tail(size_t bytes) const {
  std::ifstream in(log_path_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

}  // namespace msomni::agent
