// Secrets of a job: a random token from /dev/urandom, a file only its owner can read (mode
// 0600) to hand an endpoint's address and token to local clients, and how processes of the
// job get the token: from such a file or from the environment, never on a command line
// (which every user of the machine can read in /proc).
#pragma once

#include <string>

namespace msomni {

// 32 hex digits (128 bits) from /dev/urandom; throws when it cannot be read.
std::string random_token();

// Replaces `path` with `text` in a file of mode 0600, atomically: a reader sees the old text or
// the new, never a torn one (temporary, fsync, rename). Throws with the path and the reason.
void write_private_file(const std::string& path, const std::string& text);

// The environment variable through which agents hand the job's token to the ranks they start.
inline constexpr const char* job_token_env = "MSOMNI_JOB_TOKEN";

// The token in `path`: a file with the token alone (surrounding whitespace ignored), or a
// run directory's control.json (its "token" field). Throws, naming the path, when the file
// cannot be read, holds no token, or can be read by anybody but its owner.
std::string read_secret_file(const std::string& path);
// Throws, naming the path, when `path` cannot be stat'ed or anybody but its owner may read it.
void refuse_readable_by_others(const std::string& path);

// The value of `name` in the environment (empty when unset), removed from it so that
// whatever this process starts does not inherit it by accident.
std::string take_secret_env(const char* name);

}  // namespace msomni
