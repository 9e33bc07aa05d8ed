// Starting and ending child processes: the one fork/exec of msomni. A program is started
// from an argv (no shell), with this process's environment plus additions, its stdin,
// stdout and stderr inherited, on pipes, on /dev/null or on a file, and no other descriptor
// of ours (UCX opens its sockets without close-on-exec). It may get a process group of its
// own and a signal when its parent dies. A program that cannot start is an error thrown by
// spawn(), with the errno text of the step that failed (the child reports a failed exec
// through a close-on-exec pipe), never a child that exits 127.
//
// A child handle signals and reaps only its own process: an empty, moved-from or reaped
// handle signals nothing (a pid <= 0 would mean every process or our own group), and a
// reaped pid may already be someone else's. The destructor SIGKILLs what still runs (its
// group, when it has one) and reaps it, so no handle leaves a process behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::process {

// Thrown by spawn(): "cannot start PROGRAM: STEP: errno text", or "cannot open PATH: ...".
struct spawn_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where one of the child's stdin, stdout or stderr goes.
struct stream {
  enum class kind { inherit, null, pipe, file, same_as_stdout, descriptor };
  kind how = kind::inherit;
  std::string path;  // for file: read for stdin, appended to (created 0644) for output
  int fd = -1;       // for descriptor: one of ours, given to the child as is (we keep ours)

  static stream inherit() { return {}; }
  static stream null() { return {kind::null, {}}; }
  static stream pipe() { return {kind::pipe, {}}; }
  static stream file(std::string path) { return {kind::file, std::move(path)}; }
  static stream same_as_stdout() { return {kind::same_as_stdout, {}}; }  // stderr only: 2>&1
  static stream descriptor(int fd) { return {kind::descriptor, {}, fd}; }
};

struct spawn_options {
  std::vector<std::string> env;  // "NAME=value", added to our environment, replacing a namesake
  stream in, out, err;
  bool search_path = false;       // a program name without '/' is looked up in PATH
  bool own_process_group = true;  // setpgid(0, 0): signal_group() then reaches its descendants
  // With own_process_group: once the process has ended, what is left of its group (children
  // that ignored a signal, or that it left running) is SIGKILLed before the process is reaped,
  // while its pid still names the group, so no descendant outlives it.
  bool end_group_on_exit = false;
  // PR_SET_PDEATHSIG: sent to the child when the thread that spawned it ends; 0 for none. The
  // child checks its parent after setting it, so a parent that died just before is seen too.
  int parent_death_signal = 0;
  // Signals the program starts with ignored (SIG_IGN survives exec; a handler would not).
  std::vector<int> ignored_signals;
};

struct exit_status {
  int code = 0;    // the exit code when it exited
  int signal = 0;  // the signal that ended it, 0 when it exited
  // As a shell reports it: the code, or 128 + the signal.
  int shell_code() const { return signal ? 128 + signal : code; }
};

class child {
 public:
  child() = default;  // no process
  child(child&& other) noexcept;
  child& operator=(child&& other) noexcept;
  child(const child&) = delete;
  child& operator=(const child&) = delete;
  ~child();

  // Started and not yet reaped (it may have ended: poll() tells).
  bool running() const { return pid_ > 0 && !status_; }
  pid_t pid() const { return pid_; }
  // The parent's ends of the pipes asked for, -1 otherwise; the handle closes them.
  int stdin_fd() const { return stdin_; }
  int stdout_fd() const { return stdout_; }
  int stderr_fd() const { return stderr_; }
  void close_stdin();
  void close_stdout();

  // Lets the process go without ending it: the handle forgets it (and closes its ends of the
  // pipes), so it runs on past this handle and this process, and whoever inherits it reaps it.
  void release();

  // Sends `sig` to the process (signal_group: to its process group, or the process when it
  // has no group of its own). False, sending nothing, when no process runs.
  bool signal(int sig) const;
  bool signal_group(int sig) const;

  // Its status once ended, reaping it; nullopt while it runs or when there is no process.
  std::optional<exit_status> poll();
  // Waits at most `timeout` for it to end; nullopt on timeout or when there is no process.
  std::optional<exit_status> wait_for(std::chrono::milliseconds timeout);
  std::optional<exit_status> wait();

 private:
  friend child spawn(const std::vector<std::string>& argv, const spawn_options& options);
  friend child fork_running(const std::function<int()>& body);
  void close_fds();
  void end();  // SIGKILL (the group when it has one) and reap

  // The process has ended (not reaped yet): its group's remaining members are killed.
  void end_rest_of_group() const;

  pid_t pid_ = -1;
  bool own_group_ = false;
  bool end_group_on_exit_ = false;
  int stdin_ = -1, stdout_ = -1, stderr_ = -1;
  std::optional<exit_status> status_;
};

// Starts argv[0] with arguments argv[1...]. Throws spawn_error when it cannot.
child spawn(const std::vector<std::string>& argv, const spawn_options& options = {});
// The same with the program apart from its arguments.
child spawn(const std::string& program, const std::vector<std::string>& args, const spawn_options& options = {});

// A child running this program's own code instead of another program, for tests that need
// a process to kill while it holds something (a lock, a journal, a child of its own): forks,
// the child runs `body` and exits with what it returns (1 when it throws), never returning
// into the caller's stack. It shares our descriptors and stays in our process group. After a
// fork only the forking thread exists, so `body` must not wait on other threads' work.
// Throws spawn_error when fork fails.
child fork_running(const std::function<int()>& body);

// Everything on `fd` (a child's pipe) until EOF, or until a read fails.
std::string read_to_end(int fd);

// Between fork and exec: closes every descriptor from `first` up except `keep` (-1: none),
// so that a program gets only what was dup2'ed below `first`. Async-signal-safe.
void close_descriptors_from(int first, int keep = -1);

}  // namespace msomni::process
