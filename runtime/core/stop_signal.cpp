// stop_signal (see stop_signal.hpp).
#include "core/stop_signal.hpp"

#include <csignal>

namespace msomni::stop_signal {

namespace {
std::atomic<bool> g_stop{false};
std::atomic<int> g_number{0};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free number");
extern "C" void on_stop(int sig) {
  g_number.store(sig);
  g_stop.store(true);
}
}  // namespace

std::atomic<bool>& flag() { return g_stop; }
std::atomic<int>& number() { return g_number; }

void install() {
  std::signal(SIGINT, on_stop);
  std::signal(SIGTERM, on_stop);
}

void restore() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace msomni::stop_signal
