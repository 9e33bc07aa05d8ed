// Levelled logging to stderr: `MSOMNI_LOG(warn, "gateway") << "dropped frame " << n;`
// One line per record: time, level, component, message. Thread-safe; cheap when filtered.
// Diagnostics go through it. What is not a diagnostic is printed as it is: a
// program's result and the refusal it exits with (its command-line output), the progress
// line on a terminal, and the rank's protocol lines (COMPUTE, DATA, JOINED, STEP, CHECKPOINT,
// STALLED, RESULT) that people and the tests read from its log.
#pragma once

#include <sstream>
#include <string_view>

namespace msomni::log {

enum class level : int { trace = 0, debug = 1, info = 2, warn = 3, error = 4, off = 5 };

void set_level(level l);
level current_level();
bool parse_level(std::string_view text, level& out);
bool enabled(level l);

// Collects one record and writes it when destroyed.
class record {
 public:
  record(level l, std::string_view component, const char* file, int line);
  ~record();
  record(const record&) = delete;
  record& operator=(const record&) = delete;
  template <class T>
  record& operator<<(const T& x) {
    os_ << x;
    return *this;
  }

 private:
  level level_;
  std::ostringstream os_;
};

}  // namespace msomni::log

#define MSOMNI_LOG(lvl, component)                                           \
  if (!::msomni::log::enabled(::msomni::log::level::lvl)) {                  \
  } else                                                                     \
    ::msomni::log::record(::msomni::log::level::lvl, component, __FILE__, __LINE__)
