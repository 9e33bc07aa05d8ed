// Remote requests: settings, deadline and retries, SigV4 (see remote_io.hpp).
#include "remote_io.hpp"

#include "config/config_loader.hpp"
#include "core/log.hpp"
#include "metrics/metrics_registry.hpp"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

namespace msomni::data {
namespace {

std::mutex settings_mutex;
remote_io_settings settings_value;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::string hex(const unsigned char* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = d[p[i] >> 4];
    out[2 * i + 1] = d[p[i] & 15];
  }
  return out;
}

std::string hmac(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(), out,
       &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

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

}  // namespace

void set_remote_io(const remote_io_settings& s) {
  std::lock_guard lock(settings_mutex);
  settings_value = s;
}

remote_io_settings remote_io() {
  remote_io_settings s;
  {
    std::lock_guard lock(settings_mutex);
    s = settings_value;
  }
  if (s.s3_endpoint.empty()) s.s3_endpoint = env_or("AWS_ENDPOINT_URL_S3", env_or("AWS_ENDPOINT_URL", ""));
  if (s.s3_region.empty()) s.s3_region = env_or("AWS_REGION", env_or("AWS_DEFAULT_REGION", "us-east-1"));
  if (s.s3_endpoint.empty()) s.s3_endpoint = "https://s3." + s.s3_region + ".amazonaws.com";
  while (!s.s3_endpoint.empty() && s.s3_endpoint.back() == '/') s.s3_endpoint.pop_back();
  return s;
}

remote_io_counters& remote_counters() {
  static remote_io_counters c;
  return c;
}

void watch_remote_io(const std::shared_ptr<metrics::metrics_registry>& registry) {
  if (!registry) return;
  struct watch {
    std::weak_ptr<metrics::metrics_registry> of;
    metrics::metrics_registry* raw = nullptr;
    std::unique_ptr<metrics::metrics_registry::refresher_handle> handle;
  };
  // Never destroyed: a handle outliving its registry must not deregister at exit.
  static auto* m = new std::mutex;
  static auto* watches_p = new std::vector<watch>;
  auto& watches = *watches_p;
  std::lock_guard lock(*m);
  for (auto& w : watches) {
    if (w.of.expired()) (void)w.handle.release();  // its registry is gone: nothing to deregister from
  }
  std::erase_if(watches, [](const watch& w) { return w.of.expired(); });
  for (const auto& w : watches)
    if (w.raw == registry.get()) return;
  auto last = std::make_shared<std::map<std::string, uint64_t>>();
  metrics::metrics_registry* r = registry.get();
  auto refresh = [r, last] {
    auto& c = remote_counters();
    auto add = [&](std::string_view family, const metrics::labels& l, const std::atomic<uint64_t>& v) {
      std::string id(family);
      for (const auto& [k, x] : l) id += "|" + k + "=" + x;
      const uint64_t now = v.load(), before = (*last)[id];
      r->counter(family, l).Increment(double(now - std::min(now, before)));
      (*last)[id] = now;
    };
    add("msomni_data_remote_requests_total", {}, c.requests);
    add("msomni_data_remote_bytes_total", {}, c.bytes);
    add("msomni_data_remote_retries_total", {{"cause", "server_error"}}, c.retry_server);
    add("msomni_data_remote_retries_total", {{"cause", "throttled"}}, c.retry_throttled);
    add("msomni_data_remote_retries_total", {{"cause", "reset"}}, c.retry_reset);
    add("msomni_data_remote_retries_total", {{"cause", "timeout"}}, c.retry_timeout);
    add("msomni_data_remote_retries_total", {{"cause", "short_body"}}, c.retry_short);
    add("msomni_data_remote_failures_total", {}, c.gave_up);
    add("msomni_data_remote_indexes_total", {{"origin", "built"}}, c.index_built);
    add("msomni_data_remote_indexes_total", {{"origin", "cache"}}, c.index_loaded);
    add("msomni_data_remote_cache_reads_total", {{"result", "hit"}}, c.cache_hits);
    add("msomni_data_remote_cache_reads_total", {{"result", "miss"}}, c.cache_misses);
    add("msomni_data_remote_cache_evictions_total", {}, c.cache_evictions);
    add("msomni_data_remote_cache_rejected_total", {}, c.cache_rejected);
    add("msomni_data_remote_cache_write_failures_total", {}, c.cache_write_failed);
    add("msomni_data_remote_prefetch_total", {{"result", "issued"}}, c.prefetch_issued);
    add("msomni_data_remote_prefetch_total", {{"result", "used"}}, c.prefetch_used);
    add("msomni_data_remote_prefetch_total", {{"result", "dropped"}}, c.prefetch_dropped);
    r->gauge("msomni_data_remote_cache_bytes").Set(double(c.cache_bytes.load()));
    r->gauge("msomni_data_remote_cache_capacity_bytes").Set(double(c.cache_capacity.load()));
  };
  watches.push_back({registry, r, std::make_unique<metrics::metrics_registry::refresher_handle>(registry->add_refresher(refresh))});
}

bool is_remote_uri(const std::string& uri) { return config::is_remote_source(uri); }

std::string remote_uri_problem(const std::string& uri) { return config::remote_source_problem(uri); }

std::string uri_encode(const std::string& s, bool encode_slash) {
  static const char* d = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !encode_slash)) {
      out.push_back(char(c));
    } else {
      out.push_back('%');
      out.push_back(d[c >> 4]);
      out.push_back(d[c & 15]);
    }
  }
  return out;
}

std::string sha256_hex(const std::string& data) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out);
  return hex(out, sizeof out);
}

namespace {

std::vector<std::pair<std::string, std::string>> canonical_headers(const sigv4_input& in) {
  std::vector<std::pair<std::string, std::string>> h;
  h.emplace_back("host", in.host);
  for (const auto& [k, v] : in.headers) h.emplace_back(lower(k), trim(v));
  std::sort(h.begin(), h.end());
  return h;
}

std::string signed_headers(const std::vector<std::pair<std::string, std::string>>& h) {
  std::string out;
  for (const auto& [k, v] : h) out += (out.empty() ? "" : ";") + k;
  return out;
}

std::string scope_of(const sigv4_input& in) {
  return in.amz_date.substr(0, 8) + "/" + in.region + "/" + in.service + "/aws4_request";
}

}  // namespace

std::string sigv4_canonical_request(const sigv4_input& in) {
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [k, v] : in.query) q.emplace_back(uri_encode(k), uri_encode(v));
  std::sort(q.begin(), q.end());
  std::string query;
  for (const auto& [k, v] : q) query += (query.empty() ? "" : "&") + k + "=" + v;
  const auto h = canonical_headers(in);
  std::string headers;
  for (const auto& [k, v] : h) headers += k + ":" + v + "\n";
  return in.method + "\n" + in.path + "\n" + query + "\n" + headers + "\n" + signed_headers(h) + "\n" + in.payload_hash;
}

std::string sigv4_string_to_sign(const sigv4_input& in) {
  return "AWS4-HMAC-SHA256\n" + in.amz_date + "\n" + scope_of(in) + "\n" + sha256_hex(sigv4_canonical_request(in));
}

std::string sigv4_authorization(const sigv4_input& in, const sigv4_credentials& cred) {
  std::string key = hmac("AWS4" + cred.secret_key, in.amz_date.substr(0, 8));
  key = hmac(key, in.region);
  key = hmac(key, in.service);
  key = hmac(key, "aws4_request");
  const std::string sig = hmac(key, sigv4_string_to_sign(in));
  return "AWS4-HMAC-SHA256 Credential=" + cred.access_key + "/" + scope_of(in) +
         ", SignedHeaders=" + signed_headers(canonical_headers(in)) +
         ", Signature=" + hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
}

sigv4_credentials s3_credentials() {
  const auto s = remote_io();
  sigv4_credentials c;
  if (!s.s3_credentials_file.empty()) {
    std::ifstream in(s.s3_credentials_file);
    if (!in) throw std::runtime_error("io.s3_credentials_file " + s.s3_credentials_file + " cannot be read");
    std::string line, section;
    while (std::getline(in, line)) {
      line = trim(line);
      if (line.empty() || line[0] == '#' || line[0] == ';') continue;
      if (line.front() == '[' && line.back() == ']') {
        section = trim(line.substr(1, line.size() - 2));
        if (section.rfind("profile ", 0) == 0) section = trim(section.substr(8));
        continue;
      }
      if (section != s.s3_profile) continue;
      const auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      const auto k = lower(trim(line.substr(0, eq))), v = trim(line.substr(eq + 1));
      if (k == "aws_access_key_id") c.access_key = v;
      else if (k == "aws_secret_access_key") c.secret_key = v;
      else if (k == "aws_session_token") c.session_token = v;
    }
    if (c.access_key.empty() || c.secret_key.empty())
      throw std::runtime_error("io.s3_credentials_file " + s.s3_credentials_file + " has no aws_access_key_id and " +
                               "aws_secret_access_key in profile [" + s.s3_profile + "]");
    return c;
  }
  c.access_key = env_or("AWS_ACCESS_KEY_ID", "");
  c.secret_key = env_or("AWS_SECRET_ACCESS_KEY", "");
  c.session_token = env_or("AWS_SESSION_TOKEN", "");
  if (c.access_key.empty() || c.secret_key.empty())
    throw std::runtime_error("no S3 credentials: set io.s3_credentials_file or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  return c;
}

http_response http_fetch(const http_request& req) {
  thread_local curl_handle curl;
  auto& counters = remote_counters();
  const auto s = remote_io();
  const auto started = std::chrono::steady_clock::now();
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::optional<sigv4_credentials> cred;
  if (req.sign_s3) cred = s3_credentials();
  const uint64_t want = req.range ? req.range->second - req.range->first + 1 : 0;
  std::string got;  // a range's bytes received so far (a cut body resumes after them)
  failure last = failure::none;
  std::string last_detail;
  for (uint32_t attempt = 0;; ++attempt) {
    if (attempt > 0) {
      const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (elapsed_s >= s.give_up_s) {
        ++counters.gave_up;
        throw remote_unreachable(req.method + " " + req.url + " failed for " + std::to_string(int(elapsed_s)) +
                                 " s (io.remote_give_up_s " + std::to_string(int(s.give_up_s)) + "): " +
                                 cause_name(last) + (last_detail.empty() ? "" : " (" + last_detail + ")"));
      }
      const double cap = std::min(s.backoff_max_ms, s.backoff_base_ms * double(uint64_t{1} << std::min(attempt - 1, 20u)));
      const double wait_ms = std::uniform_real_distribution<double>(0.0, cap)(rng);
      const double left_ms = (s.give_up_s - elapsed_s) * 1000.0;
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(std::max(0.0, std::min(wait_ms, left_ms))));
    }
    CURL* h = curl.h;
    curl_easy_reset(h);
    transfer t;
    t.h = h;
    t.ranged = bool(req.range);
    t.from = req.range ? req.range->first + got.size() : 0;
    t.cap = req.range ? size_t(want - got.size()) : size_t(256) << 20;
    curl_slist* hdrs = nullptr;
    std::vector<std::pair<std::string, std::string>> headers = req.headers;
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
    ++counters.requests;
    const CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdrs);
    counters.bytes += t.body.size();
    const bool ok_status = status >= 200 && status < 300;
    if (req.range && ok_status) {
      got += t.body;  // a cut body resumes after what arrived
      if (got.size() >= want) return {206, std::move(got), std::move(t.headers)};
    }
    if (rc != CURLE_OK) {
      last_detail = curl_easy_strerror(rc);
      // Part of a range arrived before the connection ended: a short body, resumed after it.
      const bool cut_short = rc == CURLE_PARTIAL_FILE || (rc == CURLE_WRITE_ERROR && ok_status) ||
                             (req.range && ok_status && !t.body.empty());
      if (rc == CURLE_OPERATION_TIMEDOUT && t.body.empty()) last = failure::timeout, ++counters.retry_timeout;
      else if (cut_short) last = failure::short_body, ++counters.retry_short;
      else if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL)
        throw remote_unreachable(req.method + " " + req.url + ": " + last_detail);
      else last = failure::reset, ++counters.retry_reset;
      continue;
    }
    if (status == 429 || status == 503) {
      last = failure::throttled, ++counters.retry_throttled;
      last_detail = "HTTP " + std::to_string(status);
      continue;
    }
    if (status >= 500) {
      last = failure::server, ++counters.retry_server;
      last_detail = "HTTP " + std::to_string(status);
      continue;
    }
    if (!ok_status || !req.range) return {status, std::move(t.body), std::move(t.headers)};
    last = failure::short_body, ++counters.retry_short;
    last_detail = "got " + std::to_string(got.size()) + " of " + std::to_string(want) + " bytes";
  }
}

}  // namespace msomni::data
