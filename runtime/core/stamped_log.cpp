// Stamped log copying (see stamped_log.hpp).
#include "stamped_log.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace msomni {

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char b[64];  // room for any int the fields could hold, so the format never truncates
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return b;
}

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void copy_stamped(int in, int out) {
  char buf[8192];
  bool at_line_start = true;
  std::string chunk;
  for (;;) {
    const ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    chunk.clear();
    const std::string stamp = utc_timestamp() + " ";
    for (ssize_t i = 0; i < n; ++i) {
      if (at_line_start) chunk += stamp;
      chunk += buf[i];
      at_line_start = buf[i] == '\n';
    }
    write_all(out, chunk);
  }
  if (!at_line_start) write_all(out, "\n");
}

}  // namespace msomni
