// http_fetch: one remote request with its deadline, retries with backoff, and a cut body
// resumed by range (see remote_io.hpp).
#include "remote_io.hpp"

#include "remote_text.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <mutex>
#include <random>
#include <thread>

namespace msomni::data {
namespace {

using remote_text::lower;
using remote_text::trim;

void curl_global() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// One easy handle per thread: connections to a store are kept and reused.
struct curl_handle {
  CURL* h = nullptr;
  curl_handle() {
    curl_global();
    h = curl_easy_init();
  }
  ~curl_handle() {
    if (h) curl_easy_cleanup(h);
  }
};

struct transfer {
  CURL* h = nullptr;
  std::string body;
  size_t cap = 0;         // the most body bytes kept (a bound on memory)
  bool ranged = false;    // a range was asked for: [from, from + cap)
  uint64_t from = 0;
  uint64_t seen = 0;      // body bytes seen (a 200 answer starts at the object's first byte)
  std::map<std::string, std::string> headers;
};

size_t on_body(char* p, size_t size, size_t n, void* user) {
  auto* t = static_cast<transfer*>(user);
  const size_t k = size * n;
  long status = 0;
  curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &status);
  if (t->ranged && status == 200) {
    // The server ignored Range: keep the overlap with the wanted bytes, stop after them.
    const uint64_t a = std::max(t->seen, t->from), b = std::min(t->seen + k, t->from + t->cap);
    if (b > a) t->body.append(p + (a - t->seen), size_t(b - a));
    t->seen += k;
    return t->body.size() >= t->cap ? 0 : k;
  }
  if (t->body.size() + k > t->cap) return 0;  // more than asked for or allowed: end the transfer
  t->body.append(p, k);
  return k;
}

size_t on_header(char* p, size_t size, size_t n, void* user) {
  auto* t = static_cast<transfer*>(user);
  const std::string line(p, size * n);
  if (line.rfind("HTTP/", 0) == 0) t->headers.clear();  // a new response (after a redirect or 100)
  const auto colon = line.find(':');
  if (colon != std::string::npos) t->headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  return size * n;
}

std::string amz_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[20];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

struct split_url {
  std::string scheme, host, path, query;  // host with port; path starts with '/'
};

split_url split(const std::string& url) {
  split_url u;
  const auto se = url.find("://");
  u.scheme = url.substr(0, se);
  const auto rest = url.substr(se + 3);
  const auto slash = rest.find('/');
  u.host = rest.substr(0, slash);
  std::string pq = slash == std::string::npos ? "/" : rest.substr(slash);
  const auto q = pq.find('?');
  if (q != std::string::npos) {
    u.query = pq.substr(q + 1);
    pq = pq.substr(0, q);
  }
  u.path = pq;
  return u;
}

std::string uri_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(char(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parse_query(const std::string& q) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = 0;
  while (at < q.size()) {
    auto amp = q.find('&', at);
    if (amp == std::string::npos) amp = q.size();
    const std::string part = q.substr(at, amp - at);
    const auto eq = part.find('=');
    if (!part.empty())
      out.emplace_back(uri_decode(part.substr(0, eq)), eq == std::string::npos ? "" : uri_decode(part.substr(eq + 1)));
    at = amp + 1;
  }
  return out;
}

enum class failure { none, server, throttled, reset, timeout, short_body };

const char* cause_name(failure f) {
  switch (f) {
    case failure::server: return "server_error";
    case failure::throttled: return "throttled";
    case failure::reset: return "reset";
    case failure::timeout: return "timeout";
    case failure::short_body: return "short_body";
    case failure::none: break;
  }
  return "none";
}

using header_list = std::vector<std::pair<std::string, std::string>>;

// The headers of one try: the request's own, the range still missing, and SigV4's when signed.
header_list try_headers(const http_request& req, const transfer& t, const std::optional<sigv4_credentials>& cred,
                        const remote_io_settings& s) {
  header_list headers = req.headers;
  if (req.range)
    headers.emplace_back("Range", "bytes=" + std::to_string(t.from) + "-" + std::to_string(req.range->second));
  if (cred) {
    const auto u = split(req.url);
    sigv4_input in;
    in.method = req.method;
    in.host = u.host;
    in.path = u.path;
    in.query = parse_query(u.query);
    in.amz_date = amz_now();
    in.region = s.s3_region;
    headers.emplace_back("x-amz-date", in.amz_date);
    headers.emplace_back("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    if (!cred->session_token.empty()) headers.emplace_back("x-amz-security-token", cred->session_token);
    in.headers = headers;
    headers.emplace_back("Authorization", sigv4_authorization(in, *cred));
  }
  return headers;
}

// One try on handle `h`, the body into `t`: curl's result and the HTTP status.
std::pair<CURLcode, long> perform(CURL* h, const http_request& req, transfer& t, const header_list& headers,
                                  const remote_io_settings& s) {
  curl_easy_reset(h);
  curl_slist* hdrs = nullptr;
  for (const auto& [k, v] : headers) hdrs = curl_slist_append(hdrs, (k + ": " + v).c_str());
  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  if (req.method == "HEAD") curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (req.method == "PUT") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(req.body.size()));
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, long(s.request_timeout_ms));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, long(std::min(s.request_timeout_ms, 10000.0)));
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 4L);
  const CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(hdrs);
  return {rc, status};
}

// Why the tries so far failed: the last cause, for the error that ends the request.
struct last_failure {
  failure cause = failure::none;
  std::string detail;
};

// Waits before try `attempt` (capped exponential backoff, full jitter, never past the give-up
// time), or throws remote_unreachable once the request has failed for io.remote_give_up_s.
void back_off(const http_request& req, const remote_io_settings& s, std::chrono::steady_clock::time_point started,
              uint32_t attempt, const last_failure& last) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (elapsed_s >= s.give_up_s) {
    ++remote_counters().gave_up;
    throw remote_unreachable(req.method + " " + req.url + " failed for " + std::to_string(int(elapsed_s)) +
                             " s (io.remote_give_up_s " + std::to_string(int(s.give_up_s)) + "): " +
                             cause_name(last.cause) + (last.detail.empty() ? "" : " (" + last.detail + ")"));
  }
  const double cap = std::min(s.backoff_max_ms, s.backoff_base_ms * double(uint64_t{1} << std::min(attempt - 1, 20u)));
  const double wait_ms = std::uniform_real_distribution<double>(0.0, cap)(rng);
  const double left_ms = (s.give_up_s - elapsed_s) * 1000.0;
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(std::max(0.0, std::min(wait_ms, left_ms))));
}

// A transport error of one try, counted by cause; throws remote_unreachable for one no retry
// mends (a host that does not resolve, a malformed url). `ok_status`: an HTTP 2xx had come.
failure transport_failure(CURLcode rc, bool ok_status, const http_request& req, const transfer& t,
                          const std::string& detail) {
  auto& counters = remote_counters();
  // Part of a range arrived before the connection ended: a short body, resumed after it.
  const bool cut_short = rc == CURLE_PARTIAL_FILE || (rc == CURLE_WRITE_ERROR && ok_status) ||
                         (req.range && ok_status && !t.body.empty());
  if (rc == CURLE_OPERATION_TIMEDOUT && t.body.empty()) {
    ++counters.retry_timeout;
    return failure::timeout;
  }
  if (cut_short) {
    ++counters.retry_short;
    return failure::short_body;
  }
  if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL)
    throw remote_unreachable(req.method + " " + req.url + ": " + detail);
  ++counters.retry_reset;
  return failure::reset;
}

}  // namespace

http_response http_fetch(const http_request& req) {
  thread_local curl_handle curl;
  auto& counters = remote_counters();
  const auto s = remote_io();
  const auto started = std::chrono::steady_clock::now();
  std::optional<sigv4_credentials> cred;
  if (req.sign_s3) cred = s3_credentials();
  const uint64_t want = req.range ? req.range->second - req.range->first + 1 : 0;
  std::string got;  // a range's bytes received so far (a cut body resumes after them)
  last_failure last;
  for (uint32_t attempt = 0;; ++attempt) {
    if (attempt > 0) back_off(req, s, started, attempt, last);
    transfer t;
    t.h = curl.h;
    t.ranged = bool(req.range);
    t.from = req.range ? req.range->first + got.size() : 0;
    t.cap = req.range ? size_t(want - got.size()) : size_t(256) << 20;
    const header_list headers = try_headers(req, t, cred, s);
    ++counters.requests;
    const auto [rc, status] = perform(curl.h, req, t, headers, s);
    counters.bytes += t.body.size();
    const bool ok_status = status >= 200 && status < 300;
    if (req.range && ok_status) {
      got += t.body;  // a cut body resumes after what arrived
      if (got.size() >= want) return {206, std::move(got), std::move(t.headers)};
    }
    if (rc != CURLE_OK) {
      last.detail = curl_easy_strerror(rc);
      last.cause = transport_failure(rc, ok_status, req, t, last.detail);
      continue;
    }
    if (status == 429 || status == 503 || status >= 500) {
      const bool throttled = status == 429 || status == 503;
      last.cause = throttled ? failure::throttled : failure::server;
      ++(throttled ? counters.retry_throttled : counters.retry_server);
      last.detail = "HTTP " + std::to_string(status);
      continue;
    }
    if (!ok_status || !req.range) return {status, std::move(t.body), std::move(t.headers)};
    last.cause = failure::short_body;
    ++counters.retry_short;
    last.detail = "got " + std::to_string(got.size()) + " of " + std::to_string(want) + " bytes";
  }
}

}  // namespace msomni::data
