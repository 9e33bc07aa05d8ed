// parse_store_url (see store_url.hpp).
#include "core/store_url.hpp"

namespace msomni {

std::vector<std::string> parse_store_url(const std::string& url, std::string& error) {
  const std::string scheme = "etcd://";
  error.clear();
  if (url.rfind(scheme, 0) != 0) {
    error = "must start with etcd:// (etcd://HOST:PORT[,HOST:PORT...])";
    return {};
  }
  std::vector<std::string> out;
  const auto rest = url.substr(scheme.size());
  size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const auto item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto colon = item.rfind(':');
    const auto port_text = colon == std::string::npos ? "" : item.substr(colon + 1);
    const bool digits = !port_text.empty() && port_text.size() <= 5 &&
                        port_text.find_first_not_of("0123456789") == std::string::npos;
    if (colon == std::string::npos || colon == 0 || !digits || std::stoi(port_text) == 0 || std::stoi(port_text) > 65535) {
      error = "\"" + item + "\" is not HOST:PORT (a port 1-65535)";
      return {};
    }
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace msomni
