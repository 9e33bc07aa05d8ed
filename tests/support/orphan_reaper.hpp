// Processes that outlive their parent (the ranks of a job with a control store, and the
// loggers copying their output) are re-parented to the nearest subreaper. A test that kills
// their parent makes itself that subreaper for its lifetime, so they become its children: it
// can tell them running from ended (a zombie is not running), wait for them, and reaps them.
// It reaps only msomni-rank processes by pid, never with waitpid(-1): the handles of the
// test's own children reap theirs. At its end what still runs of them is killed and reaped.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace msomni::testing {

// Alive and not a zombie.
inline bool running(int64_t pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

class orphan_reaper {
 public:
  orphan_reaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~orphan_reaper() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (auto pids = adopted(); !pids.empty(); pids = adopted()) {
      const bool late = std::chrono::steady_clock::now() > deadline;
      for (const auto pid : pids) {
        if (late) ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, WNOHANG);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  }
  orphan_reaper(const orphan_reaper&) = delete;
  orphan_reaper& operator=(const orphan_reaper&) = delete;

  // Waits up to `timeout` for `pid` to end, reaping it when it is ours; true once it ended.
  bool wait_gone(int64_t pid, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    do {
      if (::waitpid(static_cast<pid_t>(pid), nullptr, WNOHANG) == pid || !running(pid)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < until);
    return false;
  }

 private:
  // The msomni-rank processes (ranks and their loggers) that are this process's children.
  static std::vector<pid_t> adopted() {
    std::vector<pid_t> out;
    const auto me = std::to_string(::getpid());
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const auto name = e.path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(e.path() / "stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      const auto close = line.rfind(')');
      const auto open = line.find('(');
      if (close == std::string::npos || open == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 2));
      std::string state, ppid;
      rest >> state >> ppid;
      if (ppid == me && line.substr(open + 1, close - open - 1) == "msomni-rank") out.push_back(std::stoi(name));
    }
    return out;
  }
};

}  // namespace msomni::testing
