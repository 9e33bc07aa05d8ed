// A child process with its stdin and stdout on pipes: line-oriented reads with a timeout,
// and a reaper that SIGKILLs on timeout or destruction, so no caller leaves a process
// behind. Used by the multi-process tests and tools; close_descriptors_from() by every
// fork/exec path of a job.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace msomni {

// Between fork and exec: closes every descriptor from `first` up, so that the program gets
// only what the caller dup2'ed below `first`. UCX opens its sockets without close-on-exec,
// so without this every listening socket of the parent lived on in its children.
// Async-signal-safe, as a forked child of a threaded process must be.
inline void close_descriptors_from(int first) {
  if (::close_range(static_cast<unsigned>(first), ~0u, 0) == 0) return;
  rlimit lim{};
  const long max = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? static_cast<long>(lim.rlim_cur)
                                                                                          : 1L << 16;
  for (long fd = first; fd < max; ++fd) ::close(static_cast<int>(fd));
}

class child_process {
 public:
  child_process(const std::string& binary, const std::vector<std::string>& args) {
    int in_pipe[2], out_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) return;
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};  // built before fork: no malloc after it
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in_pipe[0], 0);
      ::dup2(out_pipe[1], 1);
      close_descriptors_from(3);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    stdin_ = in_pipe[1];
    stdout_ = out_pipe[0];
  }
  ~child_process() {
    close_stdin();
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (stdout_ >= 0) ::close(stdout_);
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  void write_line(const std::string& s) {
    const std::string line = s + "\n";
    [[maybe_unused]] auto n = ::write(stdin_, line.data(), line.size());
  }
  void close_stdin() {
    if (stdin_ >= 0) ::close(stdin_), stdin_ = -1;
  }
  // Next line with the given prefix (other lines are kept in `log`), or nullopt on timeout/EOF.
  std::optional<std::string> read_until(const std::string& prefix, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        log += line + "\n";
        if (line.rfind(prefix, 0) == 0) return line;
        continue;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char buf[4096];
      const auto n = ::read(stdout_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }
  void kill9() {
    if (!reaped_) ::kill(pid_, SIGKILL);  // never signal a pid that may have been reused
  }
  // True once the process has ended (reaps it; wait() then returns its code).
  bool exited() {
    if (reaped_) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    reaped_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }
  pid_t pid() const { return pid_; }
  // Waits for exit; SIGKILL after the timeout. Returns the exit code (128+signal if killed).
  int wait(std::chrono::milliseconds timeout) {
    if (reaped_) return exit_code_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      ::usleep(10000);
    }
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string log;

 private:
  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1;
  bool reaped_ = false;
  int exit_code_ = 0;
  std::string buffer_;
};

}  // namespace msomni
