// A rank's log as its copier writes it: every line stamped, whole lines only. When the disk
// fills (here: a file size limit, which fails writes as a full disk does), lines are dropped
// whole and the log never ends in a torn line; once writes succeed again a stamped line says
// how many were lost.
#include "core/stamped_log.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace {

// Runs copy_stamped in a child process (the size limit and its signal stay there), feeding it
// `pieces` through a pipe, 50 ms apart (so each is a read of its own), into `log` limited to
// `limit_bytes` (0: no limit).
void copy_in_child(const std::vector<std::string>& pieces, const std::string& log, rlim_t limit_bytes) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[1]);
    ::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead, as ENOSPC on a full disk
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (limit_bytes > 0) {
      rlimit r{limit_bytes, limit_bytes};
      ::setrlimit(RLIMIT_FSIZE, &r);
    }
    msomni::copy_stamped(fds[0], out);
    ::_exit(0);
  }
  ::close(fds[0]);
  for (const auto& text : pieces) {
    size_t done = 0;
    while (done < text.size()) {
      const auto n = ::write(fds[1], text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += size_t(n);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::close(fds[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
}

}  // namespace

TEST_CASE("copy_stamped writes whole stamped lines, and an unfinished last line gets its newline") {
  msomni::testing::temp_dir dir;
  const auto log = (dir.path() / "rank.log").string();
  copy_in_child({"first line\nsecond line\nno newline at the end"}, log, 0);
  const auto text = msomni::testing::read_text(log);
  CHECK(std::regex_search(text, std::regex("^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z first line\n")));
  CHECK(text.find("Z second line\n") != std::string::npos);
  CHECK(text.ends_with("Z no newline at the end\n"));
}

TEST_CASE("a log whose writes fail (a full disk) never ends in a torn line") {
  msomni::testing::temp_dir dir;
  const auto log = (dir.path() / "rank.log").string();
  std::vector<std::string> pieces;  // 40 reads of 5 lines
  for (int i = 0; i < 200; ++i) {
    if (i % 5 == 0) pieces.emplace_back();
    pieces.back() += "STEP {\"step\":" + std::to_string(i) + ",\"loss\":1.2345678}\n";
  }
  // Room for a few reads only: the write that would cross the limit fails part-way.
  copy_in_child(pieces, log, 2000);
  const auto written = msomni::testing::read_text(log);
  REQUIRE(!written.empty());
  CHECK(written.size() <= 2000);
  CHECK(written.back() == '\n');
  // Every line is whole: a stamp, then one of the lines as it was sent.
  size_t at = 0, lines = 0;
  while (at < written.size()) {
    const auto nl = written.find('\n', at);
    const auto line = written.substr(at, nl - at);
    CHECK_MESSAGE(std::regex_match(line, std::regex("\\S+Z STEP \\{\"step\":\\d+,\"loss\":1\\.2345678\\}")), line);
    ++lines;
    at = nl + 1;
  }
  CHECK(lines > 0);
  CHECK(lines < 200);
}

TEST_CASE("after lines were lost to a failed write, the next write that succeeds says how many") {
  msomni::testing::temp_dir dir;
  const auto log = (dir.path() / "rank.log").string();
  // Short lines, then one line too long for what is left (refused whole), then a short one.
  copy_in_child({"one\ntwo\n", std::string(900, 'x') + "\n", "three\n"}, log, 400);
  const auto text = msomni::testing::read_text(log);
  CAPTURE(text);
  CHECK(text.find("Z one\nZ") == std::string::npos);  // each line has its own stamp
  CHECK(text.find(" one\n") != std::string::npos);
  CHECK(text.find("xxx") == std::string::npos);
  CHECK(text.find(" msomni: 1 log lines were lost here") != std::string::npos);
  CHECK(text.ends_with(" three\n"));
}
