// A minimal HTTP/1.0 client for tests: GET (or another method) on 127.0.0.1:PORT, the status
// code and the body. Plain sockets, so the tests need no HTTP library.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace msomni::testing {

struct http_response {
  int status = 0;
  std::string body;
};

inline http_response http_request(const std::string& host, uint16_t port, const std::string& path,
                                  const std::string& method = "GET") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot connect to " + host + ":" + std::to_string(port));
  }
  // A method other than GET says it has no body, as a well-formed request must.
  const std::string req = method + " " + path + " HTTP/1.0\r\nHost: " + host + "\r\n" +
                          (method == "GET" || method == "HEAD" ? "" : "Content-Length: 0\r\n") + "\r\n";
  if (::send(fd, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    throw std::runtime_error("send failed");
  }
  std::string raw;
  char buf[65536];
  for (;;) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  http_response r;
  const auto sp = raw.find(' ');
  if (sp != std::string::npos) r.status = std::atoi(raw.c_str() + sp + 1);
  const auto body = raw.find("\r\n\r\n");
  if (body != std::string::npos) r.body = raw.substr(body + 4);
  return r;
}

}  // namespace msomni::testing
