// metrics_endpoint (see metrics_endpoint.hpp): one thread, poll() over the listening socket,
// a wake-up eventfd and every open connection; each connection is a small state machine.
#include "metrics/metrics_endpoint.hpp"

#include "metrics/metrics_registry.hpp"

#include <prometheus/counter.h>
#include <prometheus/text_serializer.h>

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace msomni::metrics {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char* exposition_type = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view connections_family = "msomni_metrics_endpoint_connections_total";
enum outcome : size_t { served, timed_out, evicted, refused, dropped, outcome_count };
constexpr std::array<const char*, outcome_count> outcome_names = {"served", "timed_out", "evicted", "refused", "dropped"};

struct connection {
  int fd = -1;
  clock_type::time_point deadline;
  bool answering = false;  // the head was read; `out` is being written
  std::string in;
  std::string out;
  size_t written = 0;
};

std::string response(int status, std::string_view reason, std::string_view type, const std::string& body, bool head,
                     std::string_view extra_headers = {}) {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\nContent-Type: " +
                  std::string(type) + "\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\nConnection: close\r\n" + std::string(extra_headers) + "\r\n";
  if (!head) r += body;
  return r;
}

// The answer to a complete request head (`head` ends at its blank line).
std::string answer(std::string_view head, const metrics_endpoint::collect_fn& collect, metrics_registry& own) {
  const auto line_end = head.find_first_of("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0)
    return response(400, "Bad Request", "text/plain", "bad request: not an HTTP/1.x request line\n", false);
  const std::string_view method = line.substr(0, sp1);
  std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  const bool is_head = method == "HEAD";
  if (path != "/metrics")
    return response(404, "Not Found", "text/plain", "not found: only /metrics is served here\n", is_head);
  if (method != "GET" && !is_head)
    return response(405, "Method Not Allowed", "text/plain", "method not allowed: GET /metrics\n", false,
                     "Allow: GET, HEAD\r\n");
  try {
    auto families = collect();
    auto mine = own.collect();
    families.insert(families.end(), std::make_move_iterator(mine.begin()), std::make_move_iterator(mine.end()));
    return response(200, "OK", exposition_type, prometheus::TextSerializer().Serialize(families), is_head);
  } catch (const std::exception& e) {
    return response(500, "Internal Server Error", "text/plain", std::string("cannot collect the metrics: ") + e.what() + "\n",
                    is_head);
  }
}

size_t head_end(const std::string& in) {
  const auto crlf = in.find("\r\n\r\n");
  if (crlf != std::string::npos) return crlf + 4;
  const auto lf = in.find("\n\n");
  return lf == std::string::npos ? std::string::npos : lf + 2;
}

int listen_on(const std::string& host, uint16_t port, uint16_t& bound) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only: SO_REUSEPORT would let a second endpoint share a port another listens on.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return -1;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  bound = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

}  // namespace

metrics_endpoint::metrics_endpoint(const std::string& host, uint16_t port, collect_fn collect, endpoint_limits limits)
    : host_(host), collect_(std::move(collect)), limits_(limits), own_(std::make_shared<metrics_registry>()) {
  for (const char* o : outcome_names) own_->counter(connections_family, {{"outcome", o}});  // every outcome from the start
  listen_fd_ = listen_on(host, port, port_);
  if (listen_fd_ < 0) throw std::runtime_error("the metrics endpoint cannot listen on " + host + ":" + std::to_string(port));
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    throw std::runtime_error(std::string("the metrics endpoint: eventfd: ") + std::strerror(errno));
  }
  serving_ = std::thread([this] { serve(); });
}

metrics_endpoint::~metrics_endpoint() {
  stop_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
  serving_.join();
  ::close(wake_fd_);
  ::close(listen_fd_);
}

std::string metrics_endpoint::address() const { return host_ + ":" + std::to_string(port_); }

void metrics_endpoint::serve() {
  std::array<prometheus::Counter*, outcome_count> counted{};
  for (size_t i = 0; i < outcome_count; ++i) counted[i] = &own_->counter(connections_family, {{"outcome", outcome_names[i]}});
  std::vector<connection> open;
  auto close_one = [&](size_t i, outcome why) {
    ::close(open[i].fd);
    counted[why]->Increment();
    open.erase(open.begin() + std::ptrdiff_t(i));
  };
  // Writes what the socket takes now; true when the whole response is out.
  auto flush = [](connection& c) {
    while (c.written < c.out.size()) {
      const auto n = ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? false : (c.written = c.out.size() + 1, true);
      c.written += size_t(n);
    }
    return true;
  };
  std::vector<pollfd> fds;
  while (!stop_) {
    const auto now = clock_type::now();
    // Deadlines first: a connection past its own is closed.
    for (size_t i = open.size(); i-- > 0;)
      if (open[i].deadline <= now) close_one(i, timed_out);
    auto wait = std::chrono::milliseconds(1000);
    for (const auto& c : open)
      wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(c.deadline - now));
    fds.assign({{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    for (const auto& c : open) fds.push_back({c.fd, short(c.answering ? POLLOUT : POLLIN), 0});
    if (::poll(fds.data(), fds.size(), int(std::max<int64_t>(wait.count(), 0))) < 0 && errno != EINTR) break;
    if (stop_) break;
    // Connections first (their indices match fds from 2 on), then new ones.
    for (size_t i = open.size(); i-- > 0;) {
      const short ev = fds[i + 2].revents;
      if (ev == 0) continue;
      connection& c = open[i];
      if (!c.answering) {
        char buf[4096];
        const auto n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
          close_one(i, dropped);
          continue;
        }
        if (n > 0) c.in.append(buf, size_t(n));
        const auto end = head_end(c.in);
        if (end == std::string::npos && c.in.size() < limits_.max_head_bytes) continue;
        c.out = end == std::string::npos || end > limits_.max_head_bytes
                    ? response(431, "Request Header Fields Too Large", "text/plain", "request head too large\n", false)
                    : answer(std::string_view(c.in).substr(0, end), collect_, *own_);
        c.answering = true;
        c.deadline = clock_type::now() + limits_.write_timeout;
      }
      if (flush(c)) close_one(i, c.written == c.out.size() ? served : dropped);
    }
    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (open.size() >= limits_.max_connections) {
          // Room for the newcomer: the oldest connection that has not sent its request yet.
          auto oldest = open.end();
          for (auto it = open.begin(); it != open.end(); ++it)
            if (!it->answering && (oldest == open.end() || it->deadline < oldest->deadline)) oldest = it;
          if (oldest == open.end()) {
            ::close(fd);
            counted[refused]->Increment();
            continue;
          }
          close_one(size_t(oldest - open.begin()), evicted);
        }
        connection c;
        c.fd = fd;
        c.deadline = clock_type::now() + limits_.header_timeout;
        open.push_back(std::move(c));
      }
    }
  }
  for (auto& c : open) ::close(c.fd);
}

}  // namespace msomni::metrics
