// The Python process that runs one rank's torch module: started with the interpreter
// model.torch_python names and the msomni_torch package on its path, spoken to over a socket
// (worker_channel) that is its descriptor 0. Its stdout and stderr are the rank's (a module's
// print() lands in the rank's log). It ignores SIGINT and SIGTERM (the rank decides when to
// end) and ends when the rank closes the socket, or dies with it: a killed rank's socket closes.
#pragma once

#include "core/process.hpp"
#include "torch_module/worker_channel.hpp"

#include <mutex>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

namespace msomni::models {

// The folder holding msomni_torch: PREFIX/share/msomni/python next to an installed program,
// else this source tree's runtime/python. Throws std::runtime_error naming where it looked.
std::string torch_package_dir();

class python_worker {
 public:
  // Starts `python` and waits for its greeting. Throws torch_module_error (key
  // model.torch_python) when it cannot start or cannot import torch.
  // `threads`: the worker's compute threads (its OpenMP pool is started with as many; 0: torch's
  // default).
  python_worker(const std::string& python, int threads);
  ~python_worker();
  python_worker(const python_worker&) = delete;
  python_worker& operator=(const python_worker&) = delete;

  // One request and its reply. A reply with "ok": false throws torch_module_error with the
  // worker's key and text; a worker that ended throws std::runtime_error with its exit status.
  worker_message request(const nlohmann::json& body, std::span<const uint8_t> tail = {},
                         std::span<const int> fds = {});

  // "Python 3.11.2, torch 1.13.0" as the worker reported them.
  const std::string& versions() const { return versions_; }
  pid_t pid() const { return child_.pid(); }

 private:
  [[noreturn]] void ended(const std::string& during);

  std::string python_;
  process::child child_;
  worker_channel channel_;
  std::mutex mutex_;  // one request at a time
  std::string versions_;
};

}  // namespace msomni::models
