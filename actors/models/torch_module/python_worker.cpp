// The torch worker process (see python_worker.hpp).
#include "torch_module/python_worker.hpp"

#include "torch_module/torch_module_error.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <system_error>

namespace msomni::models {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// The worker's first lines of Python: the package's folder replaces the current directory at
// the head of sys.path (so a file there named like a module cannot shadow it).
constexpr const char* worker_bootstrap =
    "import sys; sys.path[0] = sys.argv[1]; from msomni_torch.worker import main; main()";

}  // namespace

std::string torch_package_dir() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path() / ".." / "share" / "msomni" / "python").lexically_normal());
  candidates.emplace_back(MSOMNI_TORCH_PYTHON_SOURCE_DIR);
  std::string looked;
  for (const auto& c : candidates) {
    if (fs::exists(c / "msomni_torch" / "worker.py", ec)) return c.string();
    looked += (looked.empty() ? "" : ", ") + c.string();
  }
  throw std::runtime_error("cannot find the msomni_torch package (looked in " + looked + ")");
}

python_worker::python_worker(const std::string& python, int threads) : python_(python) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::system_error(errno, std::generic_category(), "torch worker: socketpair");
  channel_ = worker_channel(fds[0]);
  process::spawn_options o;
  o.in = process::stream::descriptor(fds[1]);
  o.env = {"PYTHONUNBUFFERED=1"};
  // torch.set_num_threads in the worker comes after torch's OpenMP pool has started with a
  // thread per core; ranks sharing the cores then contend (measured: 108 against 80 ms per
  // step, two ranks on two cores). The pool starts at the rank's share instead.
  if (threads > 0)
    for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS"}) o.env.push_back(std::string(name) + "=" + std::to_string(threads));
  o.search_path = python.find('/') == std::string::npos;
  o.own_process_group = false;  // whatever signals the rank's group reaches the worker too
  o.ignored_signals = {SIGINT, SIGTERM};
  try {
    child_ = process::spawn(python, {"-B", "-c", worker_bootstrap, torch_package_dir()}, o);
  } catch (const std::exception& e) {
    ::close(fds[1]);
    throw torch_module_error("model.torch_python", e.what());
  }
  ::close(fds[1]);
  worker_message hello;
  try {
    hello = channel_.receive();
  } catch (const worker_gone&) {
    ended("start-up");
  }
  if (!hello.body.value("ok", false))
    throw torch_module_error(hello.body.value("key", "model.torch_python"), hello.body.value("error", "no reason given"));
  versions_ = "Python " + hello.body.value("python", "?") + ", torch " + hello.body.value("torch", "?");
}

python_worker::~python_worker() {
  channel_.close();  // the worker reads the end of its socket and returns
  if (child_.running() && !child_.wait_for(5s)) child_.signal(SIGKILL);
  // child_'s destructor kills what is still running and reaps it.
}

worker_message python_worker::request(const nlohmann::json& body, std::span<const uint8_t> tail,
                                      std::span<const int> fds) {
  std::lock_guard lock(mutex_);
  const std::string op = body.value("op", "?");
  worker_message reply;
  try {
    channel_.send(body, tail, fds);
    reply = channel_.receive();
  } catch (const worker_gone&) {
    ended("'" + op + "'");
  }
  if (!reply.body.value("ok", false))
    throw torch_module_error(reply.body.value("key", "model.torch_file"), reply.body.value("error", "no reason given"));
  return reply;
}

void python_worker::ended(const std::string& during) {
  std::string how = "still running";
  if (const auto status = child_.wait_for(5s))
    how = status->signal ? "killed by signal " + std::to_string(status->signal)
                         : "exit code " + std::to_string(status->code);
  throw torch_module_error("model.torch_python", "the torch worker (" + python_ + ", pid " + std::to_string(child_.pid()) +
                                                     ") ended during " + during + ": " + how +
                                                     "; what it printed is above, on the same stderr");
}

}  // namespace msomni::models
