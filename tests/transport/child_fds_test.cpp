// Children inherit no descriptor beyond stdio: a listening socket opened without
// close-on-exec (as UCX opens its own) stays in the parent, for child_process (tests,
// tools) and logged_process (how agents start ranks), which also hands over the job's
// token through the environment.
#include "core/child_process.hpp"
#include "logged_process.hpp"
#include "support/process_runner.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;

namespace {

// A listening TCP socket on loopback, deliberately without SOCK_CLOEXEC.
struct listening_socket {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  listening_socket() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 4) == 0);
  }
  ~listening_socket() { ::close(fd); }
};

// The descriptors numbered 3 and up in an `ls -l /proc/PID/fd` listing.
std::vector<std::string> fds_from_3(const std::string& listing) {
  std::vector<std::string> out;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    const auto arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;
    const auto num_at = line.rfind(' ', arrow - 1) + 1;
    if (std::stoi(line.substr(num_at, arrow - num_at)) >= 3) out.push_back(line.substr(num_at));
  }
  return out;
}

// The shell lists its own descriptors ($$ is the shell, not ls).
const std::string list_fds = "ls -l /proc/$$/fd";

}  // namespace

TEST_CASE("a child_process inherits only stdin, stdout and stderr") {
  listening_socket sock;
  msomni::child_process child("/bin/sh", {"-c", list_fds + "; echo END"});
  REQUIRE(child.read_until("END", 10s));
  CAPTURE(child.log);
  CHECK(child.log.find(" 0 -> ") != std::string::npos);  // the listing is there
  CHECK(fds_from_3(child.log).empty());
  CHECK(child.wait(10s) == 0);
}

TEST_CASE("a logged_process inherits no socket and gets the job's token in its environment") {
  listening_socket sock;
  msomni::testing::temp_dir dir;
  const auto log = (dir.path() / "child.log").string();
  msomni::agent::logged_process child("/bin/sh", {"-c", list_fds + "; echo token=$MSOMNI_JOB_TOKEN"}, log,
                                      {"MSOMNI_JOB_TOKEN=abc123"});
  std::optional<int> code;
  for (int i = 0; i < 500 && !code; ++i, std::this_thread::sleep_for(20ms)) code = child.poll_exit();
  REQUIRE(code);
  CHECK(*code == 0);
  const auto text = msomni::testing::read_text(log);
  CAPTURE(text);
  CHECK(text.find(" 2 -> ") != std::string::npos);
  CHECK(fds_from_3(text).empty());
  CHECK(text.find("token=abc123") != std::string::npos);
}

TEST_CASE("a logged_process runs OpenMP's idle threads passive unless the starter chose a policy") {
  msomni::testing::temp_dir dir;
  const auto run = [&](const std::string& name) {
    const auto log = (dir.path() / name).string();
    msomni::agent::logged_process child("/bin/sh", {"-c", "echo policy=$OMP_WAIT_POLICY"}, log, {});
    std::optional<int> code;
    for (int i = 0; i < 500 && !code; ++i, std::this_thread::sleep_for(20ms)) code = child.poll_exit();
    REQUIRE(code);
    return msomni::testing::read_text(log);
  };
  const char* before = std::getenv("OMP_WAIT_POLICY");
  const std::string kept = before ? before : "";
  ::unsetenv("OMP_WAIT_POLICY");
  CHECK(run("default.log").find("policy=passive") != std::string::npos);
  ::setenv("OMP_WAIT_POLICY", "active", 1);
  CHECK(run("chosen.log").find("policy=active") != std::string::npos);
  if (before) ::setenv("OMP_WAIT_POLICY", kept.c_str(), 1);
  else ::unsetenv("OMP_WAIT_POLICY");
}
