// Levelled stderr logging (see log.hpp).
#include "core/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>

namespace msomni::log {

namespace {

level initial_level() {
  level l = level::info;
  if (const char* env = std::getenv("MSOMNI_LOG_LEVEL")) parse_level(env, l);
  return l;
}

std::atomic<int>& threshold() {
  static std::atomic<int> value{static_cast<int>(initial_level())};
  return value;
}

std::mutex& output_mutex() {
  static std::mutex m;
  return m;
}

const char* name_of(level l) {
  switch (l) {
    case level::trace: return "TRACE";
    case level::debug: return "DEBUG";
    case level::info: return "INFO ";
    case level::warn: return "WARN ";
    case level::error: return "ERROR";
    default: return "?";
  }
}

}  // namespace

void set_level(level l) { threshold().store(static_cast<int>(l)); }
level current_level() { return static_cast<level>(threshold().load()); }
bool enabled(level l) { return static_cast<int>(l) >= threshold().load(std::memory_order_relaxed); }

bool parse_level(std::string_view text, level& out) {
  static constexpr std::pair<std::string_view, level> names[] = {
      {"trace", level::trace}, {"debug", level::debug}, {"info", level::info},
      {"warn", level::warn},   {"error", level::error}, {"off", level::off}};
  for (const auto& [name, l] : names)
    if (name == text) {
      out = l;
      return true;
    }
  return false;
}

record::record(level l, std::string_view component, const char* file, int line) : level_(l) {
  const auto now = std::chrono::system_clock::now();
  const auto t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms.count()));
  os_ << stamp << ' ' << name_of(l) << ' ' << component << ": ";
  if (l >= level::warn || l == level::trace) {
    std::string_view f(file);
    if (auto slash = f.rfind('/'); slash != std::string_view::npos) f = f.substr(slash + 1);
    os_ << '[' << f << ':' << line << "] ";
  }
}

record::~record() {
  os_ << '\n';
  const auto text = os_.str();
  std::lock_guard<std::mutex> lock(output_mutex());
  std::fwrite(text.data(), 1, text.size(), stderr);
  (void)level_;
}

}  // namespace msomni::log
