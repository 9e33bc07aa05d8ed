// logged_process (see logged_process.hpp).
#include "logged_process.hpp"

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

namespace msomni::agent {

namespace {

process::spawn_options rank_options(const std::vector<std::string>& env, bool ignore_stop_signals) {
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
  o.parent_death_signal = SIGKILL;
  return o;
}

int open_log(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw process::spawn_error("cannot open " + path + ": " + std::strerror(errno));
  return fd;
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk: the rank goes on, its log is short
    done += static_cast<size_t>(n);
  }
}

// Copies `in` to `out` until EOF, each line prefixed with the time it was read. A line
// longer than the buffer is stamped once, where it began.
void copy_stamped(int in, int out) {
  char buf[8192];
  bool at_line_start = true;
  std::string chunk;
  for (;;) {
    const ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    chunk.clear();
    const std::string stamp = utc_timestamp() + " ";
    for (ssize_t i = 0; i < n; ++i) {
      if (at_line_start) chunk += stamp;
      chunk += buf[i];
      at_line_start = buf[i] == '\n';
    }
    write_all(out, chunk);
  }
  if (!at_line_start) write_all(out, "\n");
}

}  // namespace

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char b[64];  // room for any int the fields could hold, so the format never truncates
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return b;
}

logged_process::logged_process(const std::string& binary, const std::vector<std::string>& args,
                               const std::string& log_path, const std::vector<std::string>& env,
                               const std::string& about, bool ignore_stop_signals)
    : log_path_(log_path), log_fd_(open_log(log_path)) {
  try {
    child_ = process::spawn(binary, args, rank_options(env, ignore_stop_signals));
  } catch (...) {
    ::close(log_fd_);
    throw;
  }
  write_all(log_fd_, "---- " + utc_timestamp() + " msomni-rank started: pid " + std::to_string(child_.pid()) +
                         (about.empty() ? "" : ", " + about) + " ----\n");
  copier_ = std::thread([in = child_.stdout_fd(), out = log_fd_] { copy_stamped(in, out); });
}

logged_process::~logged_process() {
  kill9();
  child_.wait();
  finish_log();
}

void logged_process::finish_log() {
  if (copier_.joinable()) copier_.join();  // EOF: the process and everything holding its pipe ended
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
