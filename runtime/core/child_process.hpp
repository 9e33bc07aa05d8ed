// A child process with its stdin and stdout on pipes, for the multi-process tests and
// tools: line-oriented reads with a timeout, and a SIGKILL on timeout or destruction, so no
// caller leaves a process behind. A thin wrapper over process::child (core/process.hpp).
#pragma once

#include "core/process.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace msomni {

class child_process {
 public:
  // Throws process::spawn_error when `binary` cannot be started.
  child_process(const std::string& binary, const std::vector<std::string>& args)
      : child_(process::spawn(binary, args, options())) {}
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  void write_line(const std::string& s) {
    const std::string line = s + "\n";
    if (child_.stdin_fd() < 0) return;
    [[maybe_unused]] auto n = ::write(child_.stdin_fd(), line.data(), line.size());
  }
  void close_stdin() { child_.close_stdin(); }
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
      pollfd p{child_.stdout_fd(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char buf[4096];
      const auto n = ::read(child_.stdout_fd(), buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }
  void kill9() { child_.signal(SIGKILL); }  // nothing once reaped: the pid may be someone else's
  // True once the process has ended (reaps it; wait() then returns its code).
  bool exited() { return child_.poll().has_value(); }
  pid_t pid() const { return child_.pid(); }
  // Waits for exit; SIGKILL after the timeout. Returns the exit code (128+signal if killed).
  int wait(std::chrono::milliseconds timeout) {
    auto status = child_.wait_for(timeout);
    if (!status) {
      child_.signal(SIGKILL);
      status = child_.wait();
    }
    return status ? status->shell_code() : -1;
  }
  std::string log;

 private:
  static process::spawn_options options() {
    process::spawn_options o;
    o.in = process::stream::pipe();
    o.out = process::stream::pipe();
    o.own_process_group = false;  // in the test's group: a Ctrl-C reaches it too
    return o;
  }

  process::child child_;
  std::string buffer_;
};

}  // namespace msomni
