// A child process whose stdout and stderr go to a log file: how a node agent runs rank
// processes. It dies with its agent (PR_SET_PDEATHSIG), poll_exit() reaps without blocking, and
// the destructor SIGKILLs and reaps what is still running, so no agent leaves one behind.
// It inherits no descriptor beyond stdin (/dev/null), stdout and stderr (the log), and gets
// the agent's environment plus `env` ("NAME=value", replacing a variable of that name):
// how a job's token reaches a rank without showing on its command line.
#pragma once

#include "core/process.hpp"

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace msomni::agent {

class logged_process {
 public:
  // Throws process::spawn_error (a std::runtime_error) when the log cannot be opened or the
  // program cannot be started.
  logged_process(const std::string& binary, const std::vector<std::string>& args, const std::string& log_path,
                 const std::vector<std::string>& env = {});
  logged_process(const logged_process&) = delete;
  logged_process& operator=(const logged_process&) = delete;

  pid_t pid() const { return child_.pid(); }
  // The exit status once ended (the code, or -signal), reaping it; nullopt while running.
  std::optional<int> poll_exit();
  void kill9();
  const std::string& log_path() const { return log_path_; }
  // The last `bytes` of the log, for error reports.
  std::string log_tail(size_t bytes = 600) const;

 private:
  std::string log_path_;
  process::child child_;
};

}  // namespace msomni::agent
