// Log lines stamped with the time they were read: how a rank's output reaches its log file.
// Whoever copies a process's output stamps it (not the process itself), so that what the
// process does not write through its own logger (UCX's and the C library's messages, a
// crash's last words) is stamped too.
#pragma once

#include <string>

namespace msomni {

// "2026-12-02T06:34:11.123Z": the UTC time now, to the millisecond.
std::string utc_timestamp();

// Writes all of `s` to `fd`, retrying interrupted and short writes; false when a write fails
// (a full disk: the caller's process goes on, its log is short).
bool write_all(int fd, const std::string& s);

// Appends `s` to the file `fd` whole or not at all: a write that fails part-way (a full disk)
// is cut back to where it began, so the file never ends in a torn line. False when it failed.
bool append_whole(int fd, const std::string& s);

// Copies `in` to `out` until EOF, each line prefixed with the UTC time it began to be read and
// a space, whole lines only: a line is written once its newline came (a line of over 64 KiB in
// parts, each ended), and an unfinished last line gets its newline. Lines a write could not
// take (a full disk) are dropped whole, and the next write that succeeds begins with a stamped
// line saying how many were lost.
void copy_stamped(int in, int out);

}  // namespace msomni
