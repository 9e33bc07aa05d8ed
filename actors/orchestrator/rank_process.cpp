// rank_process (see rank_process.hpp).
#include "rank_process.hpp"

#include <csignal>
#include <fstream>
#include <iterator>

namespace msomni::orchestrator {

bool is_rank_process(int64_t pid, const std::string& name) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  const std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto program_end = cmd.find('\0');
  const auto program = cmd.substr(0, program_end);
  const bool is_rank = program.size() >= 11 && program.compare(program.size() - 11, 11, "msomni-rank") == 0;
  return is_rank && cmd.find(std::string("\0--name\0", 8) + name + '\0') != std::string::npos;
}

bool kill_rank_process(int64_t pid, const std::string& name) {
  if (!is_rank_process(pid, name)) return false;
  ::kill(static_cast<pid_t>(pid), SIGKILL);
  return true;
}

}  // namespace msomni::orchestrator
