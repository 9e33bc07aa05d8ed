// Secrets for control endpoints (SPEC R9: loopback by default, no unauthenticated control):
// a random token from /dev/urandom, and a file only its owner can read (mode 0600) to hand
// an endpoint's address and token to local clients.
#pragma once

#include <string>

namespace msomni {

// 32 hex digits (128 bits) from /dev/urandom; throws when it cannot be read.
std::string random_token();

// Writes `text` to `path` created with mode 0600 (truncating it); throws with the path.
void write_private_file(const std::string& path, const std::string& text);

}  // namespace msomni
