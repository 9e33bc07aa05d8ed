// A client of etcd's v3 API through its JSON gateway (HTTP POST, base64 keys and values),
// over libcurl. It speaks to one member at a time and moves to the next on a connection
// failure, a timeout or a 5xx answer: one pass over the members per call, never more (a
// bounded retry), so a call either gets an answer or throws etcd_error naming each member
// and what it said. A timed-out write may still have been applied; the callers' writes are
// transactions whose compares make a repeat harmless.
//
// Not thread-safe: one client per thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::store {

struct etcd_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct key_value {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

// One compare of a transaction: the key's create/mod revision, version or value against a
// given one (etcd's Compare with result EQUAL). A key that does not exist has create_revision 0.
struct compare {
  enum class target { create_revision, mod_revision, version, value };
  std::string key;
  target what = target::create_revision;
  int64_t number = 0;
  std::string value;
  static compare created_at(std::string key, int64_t revision) { return {std::move(key), target::create_revision, revision, {}}; }
  static compare value_is(std::string key, std::string value) { return {std::move(key), target::value, 0, std::move(value)}; }
};

struct operation {
  enum class kind { put, remove, range };
  kind what = kind::put;
  std::string key;
  std::string value;
  int64_t lease = 0;
  bool prefix = false;  // remove/range: every key that starts with `key`
  static operation put(std::string key, std::string value, int64_t lease = 0) {
    return {kind::put, std::move(key), std::move(value), lease, false};
  }
  static operation range(std::string key, bool prefix = false) { return {kind::range, std::move(key), {}, 0, prefix}; }
  static operation remove(std::string key, bool prefix = false) { return {kind::remove, std::move(key), {}, 0, prefix}; }
};

struct txn_result {
  bool succeeded = false;
  int64_t revision = 0;            // the store's revision after the transaction
  std::vector<key_value> ranged;   // what the branch's range operations read, in order
};

struct member_status {
  std::string endpoint;
  bool up = false;
  std::string error;     // when not up
  std::string version;
  uint64_t member_id = 0;
  uint64_t leader_id = 0;  // the raft leader this member follows (0: none)
  int64_t db_size = 0;
  int64_t raft_term = 0;
};

class etcd_client {
 public:
  // `endpoints`: "HOST:PORT" of each member; `timeout`: the bound of one HTTP request.
  etcd_client(std::vector<std::string> endpoints, std::chrono::milliseconds timeout);
  ~etcd_client();
  etcd_client(const etcd_client&) = delete;
  etcd_client& operator=(const etcd_client&) = delete;

  int64_t grant_lease(int64_t ttl_s);
  // The lease's time left in seconds after this renewal; 0 when etcd no longer has it.
  int64_t keep_alive(int64_t lease);
  void revoke(int64_t lease);  // a lease etcd no longer has is not an error
  // The lease's time left in seconds without renewing it; 0 (or less) when it is gone.
  int64_t time_to_live(int64_t lease);

  std::optional<key_value> get(const std::string& key);
  std::vector<key_value> get_prefix(const std::string& prefix);
  txn_result txn(const std::vector<compare>& when, const std::vector<operation>& then,
                 const std::vector<operation>& otherwise = {});

  // Every member asked in turn (no failover: each answers for itself).
  std::vector<member_status> status_of_members();

  const std::vector<std::string>& endpoints() const { return endpoints_; }
  const std::string& current_endpoint() const { return endpoints_[current_]; }
  // Requests that moved on to another member because one did not answer.
  uint64_t failovers() const { return failovers_.load(); }

 private:
  std::string post(const std::string& path, const std::string& body);
  std::string post_to(size_t member, const std::string& path, const std::string& body, std::string& failure);

  std::vector<std::string> endpoints_;
  std::chrono::milliseconds timeout_;
  size_t current_ = 0;
  std::atomic<uint64_t> failovers_{0};
  struct curl_handle;
  std::unique_ptr<curl_handle> curl_;
};

// The key just past every key that starts with `prefix` (etcd's range_end for a prefix).
std::string prefix_end(const std::string& prefix);

}  // namespace msomni::store
