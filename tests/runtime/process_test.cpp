// The process module on real processes: exit codes and signals, pipes read to the end,
// files and the environment, a program that cannot start, a group killed after a timeout,
// a child that dies with its parent, a group ended with its leader, and handles without a
// process that signal nothing.
#include "support/text_and_pids.hpp"
#include "core/process.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

using namespace std::chrono_literals;
namespace proc = msomni::process;

using msomni::testing::ends_within_10s;

namespace {

std::string read_line(int fd) {
  std::string line;
  for (char c; ::read(fd, &c, 1) == 1 && c != '\n';) line += c;
  return line;
}


proc::spawn_options stdout_piped() {
  proc::spawn_options o;
  o.out = proc::stream::pipe();
  return o;
}

}  // namespace

TEST_CASE("a child's exit code and the signal that ended it are reported") {
  auto exits = proc::spawn({"/bin/sh", "-c", "exit 7"});
  CHECK(exits.pid() > 0);
  const auto code = exits.wait();
  REQUIRE(code);
  CHECK(code->code == 7);
  CHECK(code->signal == 0);
  CHECK_FALSE(exits.running());

  auto killed = proc::spawn({"/bin/sh", "-c", "kill -TERM $$"});
  const auto sig = killed.wait_for(10s);
  REQUIRE(sig);
  CHECK(sig->signal == SIGTERM);
  CHECK(sig->shell_code() == 128 + SIGTERM);
}

TEST_CASE("pipes carry a megabyte out and a line in, read to the end") {
  auto big = proc::spawn({"/bin/sh", "-c", "head -c 1048576 /dev/zero"}, stdout_piped());
  CHECK(proc::read_to_end(big.stdout_fd()).size() == 1048576);  // EOF: no write end left in the parent
  CHECK(big.wait()->code == 0);

  proc::spawn_options o = stdout_piped();
  o.in = proc::stream::pipe();
  o.err = proc::stream::same_as_stdout();
  auto cat = proc::spawn({"/bin/sh", "-c", "cat; echo err >&2"}, o);
  const std::string line = "one line\n";
  REQUIRE(::write(cat.stdin_fd(), line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  cat.close_stdin();
  CHECK(proc::read_to_end(cat.stdout_fd()) == "one line\nerr\n");
  CHECK(cat.wait()->code == 0);
}

TEST_CASE("output appends to a file, stdin from /dev/null, the environment gets additions") {
  msomni::testing::temp_dir dir;
  const auto log = (dir.path() / "child.log").string();
  ::setenv("MSOMNI_PROCESS_TEST", "inherited", 1);
  ::setenv("MSOMNI_PROCESS_KEPT", "kept", 1);
  proc::spawn_options o;
  o.in = proc::stream::null();
  o.out = proc::stream::file(log);
  o.err = proc::stream::same_as_stdout();
  o.env = {"MSOMNI_PROCESS_TEST=added"};
  o.search_path = true;
  for (int run = 0; run < 2; ++run) {
    auto c = proc::spawn({"sh", "-c", "echo $MSOMNI_PROCESS_TEST $MSOMNI_PROCESS_KEPT; cat; echo err >&2"}, o);
    CHECK(c.wait_for(10s)->code == 0);
  }
  ::unsetenv("MSOMNI_PROCESS_TEST");
  ::unsetenv("MSOMNI_PROCESS_KEPT");
  CHECK(msomni::testing::read_text(log) == "added kept\nerr\nadded kept\nerr\n");
}

TEST_CASE("a child inherits none of our descriptors beyond stdio") {
  const int leaky = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  REQUIRE(leaky >= 3);
  auto c = proc::spawn({"/bin/sh", "-c", "[ -e /proc/$$/fd/" + std::to_string(leaky) + " ] && echo open || echo closed"},
                       stdout_piped());
  CHECK(proc::read_to_end(c.stdout_fd()) == "closed\n");
  c.wait();
  ::close(leaky);
}

TEST_CASE("a program that cannot start is an error that says why") {
  CHECK_THROWS_WITH_AS(proc::spawn({"/nonexistent/msomni-no-such-program"}),
                       "cannot start /nonexistent/msomni-no-such-program: exec: No such file or directory",
                       proc::spawn_error);
  proc::spawn_options path;
  path.search_path = true;
  CHECK_THROWS_WITH_AS(proc::spawn({"msomni-no-such-program"}, path),
                       "cannot start msomni-no-such-program: exec: No such file or directory", proc::spawn_error);
  CHECK_THROWS_WITH_AS(proc::spawn({"/dev/null"}), "cannot start /dev/null: exec: Permission denied",
                       proc::spawn_error);
  proc::spawn_options unwritable;
  unwritable.out = proc::stream::file("/nonexistent/dir/child.log");
  CHECK_THROWS_WITH_AS(proc::spawn({"/bin/true"}, unwritable),
                       "cannot open /nonexistent/dir/child.log: No such file or directory", proc::spawn_error);
  CHECK_THROWS_AS(proc::spawn({}), proc::spawn_error);
}

TEST_CASE("after a timeout, killing the group ends the child and the grandchild it forked") {
  auto c = proc::spawn({"/bin/sh", "-c", "sleep 60 & echo $!; wait"}, stdout_piped());
  const pid_t grandchild = std::stoi(read_line(c.stdout_fd()));
  CHECK_FALSE(c.wait_for(100ms));
  CHECK(c.running());
  CHECK(c.signal_group(SIGKILL));
  const auto status = c.wait_for(10s);
  REQUIRE(status);
  CHECK(status->signal == SIGKILL);
  CHECK(ends_within_10s(grandchild));
}

TEST_CASE("with end_group_on_exit, what is left of the group is killed once the child ends") {
  // The grandchild ignores SIGTERM, so the group's SIGTERM ends only the shell; without the
  // option the grandchild would outlive it (orphaned to PID 1), with it it is killed.
  const std::string script = "trap 'exit 0' TERM; (trap '' TERM; exec sleep 60) & echo $!; sleep 60 & wait";
  for (const bool end_group : {false, true}) {
    CAPTURE(end_group);
    auto o = stdout_piped();
    o.end_group_on_exit = end_group;
    auto c = proc::spawn({"/bin/sh", "-c", script}, o);
    const pid_t grandchild = std::stoi(read_line(c.stdout_fd()));
    CHECK(c.signal_group(SIGTERM));
    const auto status = c.wait_for(10s);
    REQUIRE(status);
    CHECK(status->signal == 0);  // its trap ran
    CHECK(status->code == 0);
    if (end_group) {
      CHECK(ends_within_10s(grandchild));
    } else {
      CHECK(::kill(grandchild, 0) == 0);  // still there
      ::kill(grandchild, SIGKILL);
    }
  }
}

TEST_CASE("a handle going out of scope kills its group and reaps the child") {
  pid_t pid = -1, grandchild = -1;
  {
    auto c = proc::spawn({"/bin/sh", "-c", "sleep 60 & echo $!; wait"}, stdout_piped());
    pid = c.pid();
    grandchild = std::stoi(read_line(c.stdout_fd()));
  }
  CHECK(::waitpid(pid, nullptr, WNOHANG) == -1);  // already reaped: not our child any more
  CHECK(ends_within_10s(grandchild));
}

TEST_CASE("handles without a process signal nothing and wait for nothing") {
  // Signal 0 only checks: had a handle passed pid -1 or 0 to kill(), it would "succeed".
  proc::child none;
  CHECK(none.pid() == -1);
  CHECK_FALSE(none.running());
  CHECK_FALSE(none.signal(0));
  CHECK_FALSE(none.signal_group(0));
  CHECK_FALSE(none.poll());
  CHECK_FALSE(none.wait_for(10ms));
  CHECK_FALSE(none.wait());

  auto moved_from = proc::spawn({"/bin/sh", "-c", "exec sleep 60"});
  proc::child moved_to = std::move(moved_from);
  CHECK_FALSE(moved_from.signal(0));  // NOLINT(bugprone-use-after-move): what this checks
  CHECK_FALSE(moved_from.signal_group(0));
  CHECK_FALSE(moved_from.wait());
  CHECK(moved_to.signal(0));
  CHECK(moved_to.signal(SIGKILL));
  CHECK(moved_to.wait()->signal == SIGKILL);
  CHECK_FALSE(moved_to.signal(0));  // reaped: the pid may be someone else's now
  CHECK_FALSE(moved_to.signal_group(0));
}

TEST_CASE("fork_running: the child runs the function and exits with its result, 1 when it throws") {
  auto ok = proc::fork_running([] { return 7; });
  CHECK(ok.wait()->code == 7);
  auto thrower = proc::fork_running([]() -> int { throw std::runtime_error("no"); });
  CHECK(thrower.wait()->code == 1);
  CHECK_FALSE(thrower.signal(0));  // reaped
}

TEST_CASE("a child with a parent-death signal dies when its parent is SIGKILLed, one without lives on") {
  for (const int death_signal : {SIGKILL, 0}) {
    CAPTURE(death_signal);
    int report[2];
    REQUIRE(::pipe(report) == 0);
    // The parent to kill: it spawns a sleeper, says its pid and waits.
    auto parent = proc::fork_running([&] {
      ::close(report[0]);
      proc::spawn_options o;
      o.parent_death_signal = death_signal;
      auto sleeper = proc::spawn({"/bin/sleep", "60"}, o);
      const std::string pid = std::to_string(sleeper.pid()) + "\n";
      [[maybe_unused]] auto n = ::write(report[1], pid.data(), pid.size());
      ::pause();
      return 1;
    });
    ::close(report[1]);
    const std::string line = read_line(report[0]);
    ::close(report[0]);
    REQUIRE(!line.empty());
    const pid_t grandchild = std::stoi(line);
    CHECK(parent.signal(SIGKILL));
    CHECK(parent.wait()->signal == SIGKILL);
    if (death_signal) {
      CHECK(ends_within_10s(grandchild));
    } else {
      std::this_thread::sleep_for(200ms);
      CHECK(::kill(grandchild, 0) == 0);  // still there: the test tells the two apart
      ::kill(grandchild, SIGKILL);
      CHECK(ends_within_10s(grandchild));
    }
  }
}
