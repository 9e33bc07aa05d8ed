// Stamped log copying (see stamped_log.hpp).
#include "stamped_log.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
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

bool append_whole(int fd, const std::string& s) {
  const off_t before = ::lseek(fd, 0, SEEK_END);
  if (write_all(fd, s)) return true;
  if (before >= 0) {  // not on a pipe: nothing to cut there
    [[maybe_unused]] const int cut = ::ftruncate(fd, before);
  }
  return false;
}

void copy_stamped(int in, int out) {
  constexpr size_t line_max = 64 * 1024;  // a longer line is written in parts, each stamped
  char buf[8192];
  std::string pending;      // the unfinished line, stamped where it began
  std::string lines;        // the whole lines of this read, stamped
  uint64_t lost_lines = 0;  // since the last append that failed
  const auto put = [&](const std::string& text, uint64_t count) {
    std::string out_text;
    if (lost_lines > 0)
      out_text = utc_timestamp() + " msomni: " + std::to_string(lost_lines) +
                 " log lines were lost here (a write to this log failed: a full disk?)\n";
    out_text += text;
    if (append_whole(out, out_text)) {
      lost_lines = 0;
    } else {
      lost_lines += count;
    }
  };
  for (;;) {
    const ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    lines.clear();
    uint64_t count = 0;
    const std::string stamp = utc_timestamp() + " ";
    for (ssize_t i = 0; i < n; ++i) {
      if (pending.empty()) pending = stamp;
      pending += buf[i];
      if (buf[i] == '\n' || pending.size() >= line_max) {
        if (buf[i] != '\n') pending += '\n';
        lines += pending;
        pending.clear();
        ++count;
      }
    }
    if (count > 0) put(lines, count);
  }
  if (!pending.empty()) put(pending + "\n", 1);
}

}  // namespace msomni
