// logged_process (see logged_process.hpp).
#include "logged_process.hpp"

#include <signal.h>

#include <fstream>
#include <sstream>

namespace msomni::agent {

namespace {

process::spawn_options rank_options(const std::string& log_path, const std::vector<std::string>& env) {
  process::spawn_options o;
  o.env = env;
  o.in = process::stream::null();
  o.out = process::stream::file(log_path);
  o.err = process::stream::same_as_stdout();
  o.own_process_group = false;  // in the agent's group, as a Ctrl-C at the agent's terminal expects
  o.parent_death_signal = SIGKILL;
  return o;
}

}  // namespace

logged_process::logged_process(const std::string& binary, const std::vector<std::string>& args,
                               const std::string& log_path, const std::vector<std::string>& env)
    : log_path_(log_path), child_(process::spawn(binary, args, rank_options(log_path, env))) {}

std::optional<int> logged_process::poll_exit() {
  const auto status = child_.poll();
  if (!status) return std::nullopt;
  return status->signal ? -status->signal : status->code;
}

void logged_process::kill9() { child_.signal(SIGKILL); }  // nothing once reaped: the pid may be someone else's

std::string logged_process::log_tail(size_t bytes) const {
  std::ifstream in(log_path_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

}  // namespace msomni::agent
