// A child process whose stdout and stderr go to a log file: how a node agent runs rank
// processes. It dies with its agent (PR_SET_PDEATHSIG), poll_exit() reaps without blocking, and
// the destructor SIGKILLs and reaps what is still running, so no agent leaves one behind;
// release() lets it run on instead. Started with an outliving logger, it does not die with
// its agent and its output is copied by that logger process instead of the agent's thread.
// It inherits no descriptor beyond stdin (/dev/null), stdout and stderr (a pipe to its
// logger), and gets the agent's environment plus `env` ("NAME=value", replacing a variable of
// that name): how a job's token reaches a rank without showing on its command line.
//
// The log: one header line per start ("---- TIME msomni-rank started: pid N, <about> ----"),
// then every line the process writes, prefixed with the UTC time it was read
// ("2026-12-02T06:34:11.123Z "). The agent stamps the lines as it copies them, rather than
// the rank stamping its own, so that what the rank does not write itself (UCX's and the C
// library's messages, a crash's last words) is stamped too, and the rank's protocol lines
// stay as they are on its stdout.
#pragma once

#include "core/process.hpp"

#include <sys/types.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace msomni::agent {

class logged_process {
 public:
  // Throws process::spawn_error (a std::runtime_error) when the log cannot be opened or the
  // program cannot be started. `about` goes into the header (e.g. "rank-0, attempt 3").
  // `ignore_stop_signals`: the process starts with SIGTERM and SIGINT ignored (it still ends
  // by SIGKILL, how an agent stops it), for when a manager signals every process of the node
  // at once and the control process, not the signal, decides when ranks stop.
  // `outliving_logger` (a program, run as `PROGRAM --stamp-log LOG`): the process outlives
  // this object and the agent (no parent death signal), and that program, outliving them too,
  // stamps its output into the log instead of a thread of the agent. How ranks of a job with
  // a control store train on while no control process runs.
  logged_process(const std::string& binary, const std::vector<std::string>& args, const std::string& log_path,
                 const std::vector<std::string>& env = {}, const std::string& about = {},
                 bool ignore_stop_signals = false, const std::string& outliving_logger = {});
  ~logged_process();
  logged_process(const logged_process&) = delete;
  logged_process& operator=(const logged_process&) = delete;

  pid_t pid() const { return child_.pid(); }
  // The exit status once ended (the code, or -signal), reaping it, with everything it wrote
  // in the log; nullopt while running.
  std::optional<int> poll_exit();
  void kill9();
  // Lets the process (and its logger) run on: this object forgets them and ends nothing.
  void release();
  const std::string& log_path() const { return log_path_; }
  // The last `bytes` of the log, for error reports.
  std::string log_tail(size_t bytes = 600) const;

 private:
  void finish_log();  // waits for the copier (the pipe's end) and closes the log

  std::string log_path_;
  int log_fd_ = -1;
  process::child child_;
  process::child logger_;  // an outliving process's copier (empty otherwise)
  std::thread copier_;
};

}  // namespace msomni::agent
