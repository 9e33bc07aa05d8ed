// Requests to remote shard stores (plain HTTP(S) servers and S3-compatible object stores):
// the settings a process reads them with, one request with its deadline and retries, AWS
// Signature Version 4, and the counters every request feeds (metrics by cause).
//
// Every request has a deadline (io.remote_request_timeout_ms, and a stall bound: no byte for
// that long ends it too). A retryable failure (a 5xx, 429 or 503 SlowDown, a connection refused
// or reset, a timeout, a body shorter than announced) is retried after a capped exponential
// backoff with full jitter; a body cut short is resumed by range from its first missing byte,
// so a caller gets every byte once. A request that has not succeeded within
// io.remote_give_up_s throws remote_unreachable with the last cause: the job ends with it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::metrics {
class metrics_registry;
}

namespace msomni::data {

// The io.* keys a process reads remote sources with (runtime/config/job_config.hpp names them);
// credentials come from io.s3_credentials_file or the AWS_* environment, never the config text.
struct remote_io_settings {
  std::string cache_dir;                  // io.cache_dir; "" keeps no local cache
  uint64_t cache_bytes = 0;               // io.cache_bytes: the cache's bound per process
  std::string s3_endpoint;                // io.s3_endpoint, else AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL
  std::string s3_region;                  // io.s3_region, else AWS_REGION / AWS_DEFAULT_REGION, else us-east-1
  std::string s3_credentials_file;        // io.s3_credentials_file (AWS shared-credentials format)
  std::string s3_profile = "default";     // io.s3_profile: the profile read from that file
  double request_timeout_ms = 30000;      // io.remote_request_timeout_ms: one request's deadline
  double give_up_s = 120;                 // io.remote_give_up_s: a request failing this long ends the job
  double backoff_base_ms = 100;           // first retry waits up to this (full jitter), doubling
  double backoff_max_ms = 5000;           // io.remote_backoff_max_ms: the cap on one wait
  uint64_t index_window_bytes = 64 << 10; // bytes read per ranged GET while walking tar headers
  uint64_t prefetch_samples = 1024;       // io.remote_prefetch: a source's draws hinted ahead
  uint64_t prefetch_bytes = 256 << 20;    // the most bytes read ahead and not yet used (half of
                                          // it, split over the sources, bounds their windows)
};

// The process-wide settings remote storage uses (set from the job config before sources are
// listed; the AWS_* environment fills what the config leaves empty).
void set_remote_io(const remote_io_settings& s);
remote_io_settings remote_io();

// Counters of every remote request of this process, by cause; exported as metrics through
// watch_remote_io (metric_catalog.cpp names them).
struct remote_io_counters {
  std::atomic<uint64_t> requests{0};        // requests sent (each try counts)
  std::atomic<uint64_t> bytes{0};           // body bytes received
  std::atomic<uint64_t> retry_server{0};    // 5xx other than 503
  std::atomic<uint64_t> retry_throttled{0}; // 429, 503 (SlowDown)
  std::atomic<uint64_t> retry_reset{0};     // connection refused, reset or closed
  std::atomic<uint64_t> retry_timeout{0};   // deadline or stall
  std::atomic<uint64_t> retry_short{0};     // body shorter than announced (resumed by range)
  std::atomic<uint64_t> gave_up{0};         // requests that failed past io.remote_give_up_s
  std::atomic<uint64_t> index_built{0};     // shard member indexes built from tar headers
  std::atomic<uint64_t> index_loaded{0};    // shard member indexes read back from the cache
  std::atomic<uint64_t> cache_hits{0};      // reads served from the local cache
  std::atomic<uint64_t> cache_misses{0};    // reads that went to the store
  std::atomic<uint64_t> cache_evictions{0}; // shards evicted (least recently used first)
  std::atomic<uint64_t> cache_rejected{0};  // cache entries dropped as stale or damaged
  std::atomic<uint64_t> cache_write_failed{0};  // writes the cache disk refused (full): served uncached
  std::atomic<uint64_t> cache_bytes{0};     // bytes the cache holds now
  std::atomic<uint64_t> cache_capacity{0};  // its bound
  std::atomic<uint64_t> prefetch_issued{0};   // GETs started ahead of use (each one run of samples)
  std::atomic<uint64_t> prefetch_samples{0};  // the reads those GETs serve (samples, or members)
  std::atomic<uint64_t> prefetch_used{0};     // reads served by a read started ahead
  std::atomic<uint64_t> prefetch_dropped{0};  // runs dropped unhinted or discarded unused (bounds)
  std::atomic<uint64_t> prefetch_held{0};     // bytes of runs held now (queued, in flight, not all taken)
  std::atomic<uint64_t> prefetch_capacity{0}; // their bound
};
remote_io_counters& remote_counters();
// Keeps the counters exported in `registry` while it lives (no-op for null).
void watch_remote_io(const std::shared_ptr<metrics::metrics_registry>& registry);

class remote_unreachable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True for s3:// and http(s):// uris (the remote stores), false for local paths and file://.
bool is_remote_uri(const std::string& uri);
// Why a remote uri cannot name a source ("" when it can): a scheme with no host or bucket.
std::string remote_uri_problem(const std::string& uri);

struct http_request {
  std::string method = "GET";
  std::string url;                 // scheme://host[:port]/path?query, already encoded
  std::optional<std::pair<uint64_t, uint64_t>> range;  // [first, last] inclusive
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                // sent with PUT (tests and tools upload shards with it)
  bool sign_s3 = false;            // sign with SigV4 for service s3 (the process's credentials)
};

struct http_response {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lowercased
};

// Sends `req` with deadline and retries (see above). 2xx and 206 return; 404, 403 and other
// 4xx return too (not retried; the caller judges them). Throws remote_unreachable past
// io.remote_give_up_s. A range request's body holds exactly the range (resumed when cut).
http_response http_fetch(const http_request& req);

// AWS Signature Version 4 (what http_fetch adds to an s3 request). Public for the test with
// the AWS documentation's example request.
struct sigv4_credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;
};
struct sigv4_input {
  std::string method, host, path;  // path already uri-encoded as sent
  std::vector<std::pair<std::string, std::string>> query;  // decoded name/value pairs
  std::vector<std::pair<std::string, std::string>> headers;  // signed besides host
  std::string amz_date;            // 20130524T000000Z
  std::string region, service = "s3";
  std::string payload_hash = "UNSIGNED-PAYLOAD";
};
std::string sigv4_canonical_request(const sigv4_input& in);
std::string sigv4_string_to_sign(const sigv4_input& in);
std::string sigv4_authorization(const sigv4_input& in, const sigv4_credentials& cred);
std::string sha256_hex(const std::string& data);
// RFC 3986 encoding as SigV4 wants it; `slash` false keeps '/' (object key paths).
std::string uri_encode(const std::string& s, bool encode_slash = true);
// The process's S3 credentials: io.s3_credentials_file's profile, else AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN. Throws std::runtime_error when none (the reason
// names where it looked, never a value).
sigv4_credentials s3_credentials();

}  // namespace msomni::data
