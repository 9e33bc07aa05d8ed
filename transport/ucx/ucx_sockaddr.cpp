// IPv4 socket addresses for ucx_node (ucx_sockaddr.hpp).
#include "ucx/ucx_sockaddr.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>

#include <stdexcept>

namespace msomni::transport {

in_addr ipv4_of(const std::string& host) {
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) != 1) throw std::invalid_argument("not an IPv4 address: \"" + host + "\"");
  return a;
}

sockaddr_in sockaddr_of(const std::string& host, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr = ipv4_of(host);
  return a;
}

bool is_loopback(const in_addr& a) { return (ntohl(a.s_addr) >> 24) == 127; }

bool is_local_ipv4(const in_addr& ip) {
  if (is_loopback(ip)) return true;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool local = false;
  for (auto* i = list; i && !local; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
      local = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == ip.s_addr;
  ::freeifaddrs(list);
  return local;
}

std::string host_port_of(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

}  // namespace msomni::transport
