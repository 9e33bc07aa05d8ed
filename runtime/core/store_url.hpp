// The control store's address as [control] store gives it: "etcd://HOST:PORT[,HOST:PORT...]".
#pragma once

#include <string>
#include <vector>

namespace msomni {

// {"HOST:PORT", ...}; an empty result with `error` set says what is wrong with it.
std::vector<std::string> parse_store_url(const std::string& url, std::string& error);

}  // namespace msomni
