// spawn and child (see process.hpp).
#include "process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace msomni::process {

namespace {

// What a child that could not exec writes to the parent: the step and its errno.
struct failure_report {
  char step[16];
  int error;
};

// This process's environment with `extra` ("NAME=value") added, replacing namesakes.
std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const auto name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || x.rfind(name, 0) == 0;
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

exit_status status_of(int raw) {
  return WIFEXITED(raw) ? exit_status{WEXITSTATUS(raw), 0} : exit_status{0, WTERMSIG(raw)};
}

// Descriptors opened for the spawn, closed on every path out of it (the child's ends, and
// the parent's ends unless handed to the child handle).
struct fd_set_guard {
  std::vector<int> fds;
  int add(int fd) {
    if (fd >= 0) fds.push_back(fd);
    return fd;
  }
  void release(int fd) { std::erase(fds, fd); }
  ~fd_set_guard() {
    for (int fd : fds) ::close(fd);
  }
};

[[noreturn]] void child_fails(int report_fd, const char* step) {
  failure_report r{};
  std::strncpy(r.step, step, sizeof r.step - 1);
  r.error = errno;
  [[maybe_unused]] auto n = ::write(report_fd, &r, sizeof r);
  ::_exit(127);
}

// In the child: `fd` becomes `target`, open across exec.
bool move_to(int fd, int target) {
  if (fd == target) return ::fcntl(fd, F_SETFD, 0) == 0;
  return ::dup2(fd, target) == target;
}

}  // namespace

void close_descriptors_from(int first, int keep) {
  const auto close_between = [](int lo, int hi) {  // both included
    if (lo > hi) return;
    if (::close_range(static_cast<unsigned>(lo), static_cast<unsigned>(hi), 0) == 0) return;
    rlimit lim{};
    const long max = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? static_cast<long>(lim.rlim_cur)
                                                                                            : 1L << 16;
    for (long fd = lo; fd <= hi && fd < max; ++fd) ::close(static_cast<int>(fd));
  };
  if (keep >= first) {
    close_between(first, keep - 1);
    close_between(keep + 1, INT_MAX);
  } else {
    close_between(first, INT_MAX);
  }
}

child spawn(const std::vector<std::string>& argv_in, const spawn_options& o) {
  if (argv_in.empty() || argv_in[0].empty()) throw spawn_error("cannot start a program without a name");
  const std::string& program = argv_in[0];
  // Everything the child needs is built before fork: a forked child of a threaded process
  // may not allocate.
  auto arg_strings = argv_in;
  auto env_strings = environment_with(o.env);
  auto argv = pointers_to(arg_strings);
  auto envp = pointers_to(env_strings);

  fd_set_guard opened;
  const auto fail = [&](const std::string& step) {
    return spawn_error("cannot start " + program + ": " + step + ": " + std::strerror(errno));
  };
  // [0] for the child, [1] for the parent (-1 when not a pipe).
  const auto connect = [&](const stream& s, bool output) -> std::pair<int, int> {
    switch (s.how) {
      case stream::kind::inherit:
      case stream::kind::same_as_stdout:
        return {-1, -1};
      case stream::kind::null: {
        const int fd = opened.add(::open("/dev/null", O_RDWR | O_CLOEXEC));
        if (fd < 0) throw fail("open /dev/null");
        return {fd, -1};
      }
      case stream::kind::file: {
        const int fd = opened.add(output ? ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
                                         : ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC));
        if (fd < 0) throw spawn_error("cannot open " + s.path + ": " + std::strerror(errno));
        return {fd, -1};
      }
      case stream::kind::descriptor:
        if (s.fd < 0) throw spawn_error("cannot start " + program + ": no descriptor given");
        return {s.fd, -1};
      case stream::kind::pipe: {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0) throw fail("pipe");
        opened.add(p[0]);
        opened.add(p[1]);
        return output ? std::pair{p[1], p[0]} : std::pair{p[0], p[1]};
      }
    }
    return {-1, -1};
  };
  const auto in = connect(o.in, false);
  const auto out = connect(o.out, true);
  const auto err = connect(o.err, true);
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) throw fail("pipe");
  opened.add(report[0]);
  opened.add(report[1]);

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw fail("fork");
  if (pid == 0) {
    if (o.own_process_group && ::setpgid(0, 0) != 0) child_fails(report[1], "setpgid");
    if (o.parent_death_signal != 0) {
      if (::prctl(PR_SET_PDEATHSIG, o.parent_death_signal) != 0) child_fails(report[1], "prctl");
      if (::getppid() != parent) ::_exit(127);  // the parent died before prctl: nobody to tell
    }
    for (const int sig : o.ignored_signals)
      if (::signal(sig, SIG_IGN) == SIG_ERR) child_fails(report[1], "signal");
    if (in.first >= 0 && !move_to(in.first, 0)) child_fails(report[1], "dup2 stdin");
    if (out.first >= 0 && !move_to(out.first, 1)) child_fails(report[1], "dup2 stdout");
    if (o.err.how == stream::kind::same_as_stdout ? !move_to(1, 2) : err.first >= 0 && !move_to(err.first, 2))
      child_fails(report[1], "dup2 stderr");
    close_descriptors_from(3, report[1]);
    if (o.search_path) ::execvpe(argv[0], argv.data(), envp.data());
    else ::execve(argv[0], argv.data(), envp.data());
    child_fails(report[1], "exec");
  }

  child c;
  c.pid_ = pid;
  c.own_group_ = o.own_process_group;
  c.end_group_on_exit_ = o.own_process_group && o.end_group_on_exit;
  c.stdin_ = in.second;
  c.stdout_ = out.second;
  c.stderr_ = err.second;
  for (int fd : {in.second, out.second, err.second})
    if (fd >= 0) opened.release(fd);  // the handle closes them from now on
  ::close(report[1]);
  opened.release(report[1]);
  failure_report r{};
  ssize_t n;
  do n = ::read(report[0], &r, sizeof r);
  while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof r)) {  // it did not exec: reap it, then say why
    c.wait();
    c.close_fds();
    c.pid_ = -1;
    errno = r.error;
    throw fail(r.step);
  }
  return c;  // EOF: the exec happened (or the child exited before it, parentless)
}

child fork_running(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid < 0) throw spawn_error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    int code = 1;
    try {
      code = body();
    } catch (...) {
    }
    ::_exit(code);
  }
  child c;
  c.pid_ = pid;
  c.own_group_ = false;
  return c;
}

std::string read_to_end(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

child spawn(const std::string& program, const std::vector<std::string>& args, const spawn_options& options) {
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn(argv, options);
}

child::child(child&& other) noexcept { *this = std::move(other); }

child& child::operator=(child&& other) noexcept {
  if (this != &other) {
    end();
    close_fds();
    pid_ = std::exchange(other.pid_, -1);
    own_group_ = std::exchange(other.own_group_, false);
    end_group_on_exit_ = std::exchange(other.end_group_on_exit_, false);
    stdin_ = std::exchange(other.stdin_, -1);
    stdout_ = std::exchange(other.stdout_, -1);
    stderr_ = std::exchange(other.stderr_, -1);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

child::~child() {
  close_stdin();
  end();
  close_fds();
}

void child::close_stdin() {
  if (stdin_ >= 0) ::close(std::exchange(stdin_, -1));
}

void child::close_stdout() {
  if (stdout_ >= 0) ::close(std::exchange(stdout_, -1));
}

void child::release() {
  close_fds();
  pid_ = -1;
  own_group_ = false;
  end_group_on_exit_ = false;
}

void child::close_fds() {
  close_stdin();
  if (stdout_ >= 0) ::close(std::exchange(stdout_, -1));
  if (stderr_ >= 0) ::close(std::exchange(stderr_, -1));
}

void child::end() {
  if (!running()) return;
  signal_group(SIGKILL);
  wait();
}

bool child::signal(int sig) const { return running() && ::kill(pid_, sig) == 0; }

bool child::signal_group(int sig) const {
  if (!running()) return false;
  return ::kill(own_group_ ? -pid_ : pid_, sig) == 0;
}

void child::end_rest_of_group() const {
  if (!end_group_on_exit_) return;
  // A zombie leader keeps its pid, so -pid_ is still its group and no one else's.
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_)
    ::kill(-pid_, SIGKILL);
}

std::optional<exit_status> child::poll() {
  if (status_ || pid_ <= 0) return status_;
  end_rest_of_group();
  int raw = 0;
  const pid_t r = ::waitpid(pid_, &raw, WNOHANG);
  if (r == pid_) status_ = status_of(raw);
  else if (r < 0 && errno == ECHILD) status_ = exit_status{-1, 0};  // reaped elsewhere: never signal it again
  return status_;
}

std::optional<exit_status> child::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pid_ <= 0 || poll()) return status_;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return std::nullopt;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(5)));
  }
}

std::optional<exit_status> child::wait() {
  if (status_ || pid_ <= 0) return status_;
  if (end_group_on_exit_) {
    siginfo_t info{};
    int w;
    do w = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT);
    while (w < 0 && errno == EINTR);
    end_rest_of_group();
  }
  int raw = 0;
  pid_t r;
  do r = ::waitpid(pid_, &raw, 0);
  while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? status_of(raw) : exit_status{-1, 0};
  return status_;
}

}  // namespace msomni::process
