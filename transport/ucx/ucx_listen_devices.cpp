// Which network devices UCX may use, so that it listens only where the node is meant to:
// UCX's TCP transport opens a listening socket on every device it is allowed (measured with
// ss -ltnp: msomni-run and each rank listened on the machine's external address although
// their own listener was bound to 127.0.0.1). UCX_NET_DEVICES limits that to loopback and
// the interface holding listen_host.
#include "ucx/ucx_node_impl.hpp"
#include "ucx/ucx_sockaddr.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <stdexcept>

namespace msomni::transport {

namespace {

// The names of the interfaces that hold `a`, and of the loopback interfaces.
std::pair<std::string, std::string> interfaces_of(const in_addr& a) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw std::runtime_error("getifaddrs failed");
  std::string holder, loopback;
  for (auto* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    const auto& addr = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    if (is_loopback(addr) && loopback.empty()) loopback = i->ifa_name;
    if (addr.s_addr == a.s_addr && holder.empty()) holder = i->ifa_name;
  }
  ::freeifaddrs(list);
  return {holder, loopback};
}

}  // namespace

std::string ucx_net_devices_for(const std::string& listen_host) {
  const auto a = ipv4_of(listen_host);
  if (a.s_addr == htonl(INADDR_ANY)) return "";  // asked to listen everywhere
  const auto [holder, loopback] = interfaces_of(a);
  if (holder.empty() && !is_loopback(a))
    throw std::invalid_argument("no network interface of this host has the address " + listen_host);
  // Loopback stays usable so that a node can still reach peers on its own host.
  const std::string lo = loopback.empty() ? "lo" : loopback;
  return holder.empty() || holder == lo ? lo : lo + "," + holder;
}

std::string local_address_towards(const std::string& host) {
  const auto a = ipv4_of(host);
  if (is_loopback(a)) return "127.0.0.1";
  // A connected UDP socket sends nothing; the kernel only picks the route and source address.
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  to.sin_addr = a;
  sockaddr_in from{};
  socklen_t len = sizeof from;
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&from), &len) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("no route from this host to " + host);
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &from.sin_addr, ip, sizeof ip);
  return ip;
}

}  // namespace msomni::transport
