// IPv4 socket addresses for ucx_node: parsing host text, telling this host's addresses from
// others, and printing an address as host:port.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

namespace msomni::transport {

// `host` as an IPv4 address; std::invalid_argument when it is not one.
in_addr ipv4_of(const std::string& host);
sockaddr_in sockaddr_of(const std::string& host, uint16_t port);
bool is_loopback(const in_addr& a);
// True when `ip` belongs to this host: loopback or one of its interfaces' IPv4 addresses.
bool is_local_ipv4(const in_addr& ip);
std::string host_port_of(const sockaddr_in& a);

}  // namespace msomni::transport
