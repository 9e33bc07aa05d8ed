// etcd_client (see etcd_client.hpp).
#include "etcd_client.hpp"


#include <curl/curl.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <mutex>

namespace msomni::store {

namespace {

using json = nlohmann::json;

std::string base64(const std::string& s) {
  std::string out(4 * ((s.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string unbase64(const std::string& s) {
  if (s.empty()) return {};
  std::string out(3 * s.size() / 4 + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  if (n < 0) throw etcd_error("etcd answered a value that is not base64");
  size_t pad = 0;
  for (auto it = s.rbegin(); it != s.rend() && *it == '='; ++it) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

// etcd's gateway writes 64-bit numbers as JSON strings, and leaves out zeros and falses.
int64_t number_of(const json& j, const char* field) {
  const auto it = j.find(field);
  if (it == j.end()) return 0;
  if (it->is_string()) return std::stoll(it->get<std::string>());
  if (it->is_number()) return it->get<int64_t>();
  return 0;
}
uint64_t unsigned_of(const json& j, const char* field) {
  const auto it = j.find(field);
  if (it == j.end()) return 0;
  if (it->is_string()) return std::stoull(it->get<std::string>());
  if (it->is_number()) return it->get<uint64_t>();
  return 0;
}

key_value kv_of(const json& j) {
  key_value kv;
  kv.key = unbase64(j.value("key", ""));
  kv.value = unbase64(j.value("value", ""));
  kv.create_revision = number_of(j, "create_revision");
  kv.mod_revision = number_of(j, "mod_revision");
  kv.version = number_of(j, "version");
  kv.lease = number_of(j, "lease");
  return kv;
}

json range_request(const std::string& key, bool prefix) {
  json r{{"key", base64(key)}};
  if (prefix) r["range_end"] = base64(prefix_end(key));
  return r;
}

json operation_json(const operation& op) {
  switch (op.what) {
    case operation::kind::put: {
      json p{{"key", base64(op.key)}, {"value", base64(op.value)}};
      if (op.lease != 0) p["lease"] = std::to_string(op.lease);
      return {{"request_put", p}};
    }
    case operation::kind::remove:
      return {{"request_delete_range", range_request(op.key, op.prefix)}};
    case operation::kind::range:
      return {{"request_range", range_request(op.key, op.prefix)}};
  }
  return {};
}

json compare_json(const compare& c) {
  json j{{"key", base64(c.key)}, {"result", "EQUAL"}};
  switch (c.what) {
    case compare::target::create_revision: j["target"] = "CREATE", j["create_revision"] = std::to_string(c.number); break;
    case compare::target::mod_revision: j["target"] = "MOD", j["mod_revision"] = std::to_string(c.number); break;
    case compare::target::version: j["target"] = "VERSION", j["version"] = std::to_string(c.number); break;
    case compare::target::value: j["target"] = "VALUE", j["value"] = base64(c.value); break;
  }
  return j;
}

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

std::string prefix_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

struct etcd_client::curl_handle {
  CURL* handle = nullptr;
  curl_slist* headers = nullptr;
  curl_handle() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    handle = curl_easy_init();
    if (!handle) throw etcd_error("libcurl could not make a handle");
    headers = curl_slist_append(nullptr, "Content-Type: application/json");
  }
  ~curl_handle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(handle);
  }
};

etcd_client::etcd_client(std::vector<std::string> endpoints, std::chrono::milliseconds timeout)
    : endpoints_(std::move(endpoints)), timeout_(timeout), curl_(std::make_unique<curl_handle>()) {
  if (endpoints_.empty()) throw etcd_error("no etcd endpoint given");
}

etcd_client::~etcd_client() = default;

std::string etcd_client::post_to(size_t member, const std::string& path, const std::string& body,
                                 std::string& failure) {
  CURL* h = curl_->handle;
  curl_easy_reset(h);
  std::string answer;
  const auto url = "http://" + endpoints_[member] + path;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, curl_->headers);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &answer);
  const CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) {
    failure = endpoints_[member] + ": " + curl_easy_strerror(rc);
    return {};
  }
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 500 || status == 0) {
    failure = endpoints_[member] + ": HTTP " + std::to_string(status) + " " + answer.substr(0, 200);
    return {};
  }
  const auto doc = json::parse(answer, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    failure = endpoints_[member] + ": an answer that is not a JSON object (HTTP " + std::to_string(status) + ")";
    return {};
  }
  failure.clear();
  return answer;
}

std::string etcd_client::post(const std::string& path, const std::string& body) {
  std::string failures;
  for (size_t tried = 0; tried < endpoints_.size(); ++tried) {
    const size_t member = (current_ + tried) % endpoints_.size();
    std::string failure;
    auto answer = post_to(member, path, body, failure);
    if (failure.empty()) {
      if (member != current_) ++failovers_, current_ = member;
      const auto doc = json::parse(answer);
      if (doc.contains("error") && !doc.contains("result"))
        throw etcd_error("etcd at " + endpoints_[member] + " refused " + path + ": " + doc.value("message", doc["error"].dump()));
      return answer;
    }
    failures += (failures.empty() ? "" : "; ") + failure;
  }
  throw etcd_error("no etcd member answered " + path + " (" + failures + ")");
}

int64_t etcd_client::grant_lease(int64_t ttl_s) {
  const auto doc = json::parse(post("/v3/lease/grant", json{{"TTL", ttl_s}}.dump()));
  const auto id = number_of(doc, "ID");
  if (id == 0) throw etcd_error("etcd granted no lease: " + doc.value("error", std::string("no ID in its answer")));
  return id;
}

int64_t etcd_client::keep_alive(int64_t lease) {
  const auto doc = json::parse(post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump()));
  return number_of(doc.value("result", json::object()), "TTL");
}

void etcd_client::revoke(int64_t lease) {
  try {
    post("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump());
  } catch (const etcd_error& e) {
    if (std::string(e.what()).find("lease not found") == std::string::npos) throw;
  }
}

int64_t etcd_client::time_to_live(int64_t lease) {
  const auto doc = json::parse(post("/v3/lease/timetolive", json{{"ID", std::to_string(lease)}}.dump()));
  return number_of(doc, "TTL");
}

std::optional<key_value> etcd_client::get(const std::string& key) {
  const auto doc = json::parse(post("/v3/kv/range", range_request(key, false).dump()));
  const auto kvs = doc.value("kvs", json::array());
  if (kvs.empty()) return std::nullopt;
  return kv_of(kvs.front());
}

std::vector<key_value> etcd_client::get_prefix(const std::string& prefix) {
  const auto doc = json::parse(post("/v3/kv/range", range_request(prefix, true).dump()));
  std::vector<key_value> out;
  for (const auto& kv : doc.value("kvs", json::array())) out.push_back(kv_of(kv));
  return out;
}

txn_result etcd_client::txn(const std::vector<compare>& when, const std::vector<operation>& then,
                            const std::vector<operation>& otherwise) {
  json body{{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const auto& c : when) body["compare"].push_back(compare_json(c));
  for (const auto& op : then) body["success"].push_back(operation_json(op));
  for (const auto& op : otherwise) body["failure"].push_back(operation_json(op));
  const auto doc = json::parse(post("/v3/kv/txn", body.dump()));
  txn_result r;
  r.succeeded = doc.value("succeeded", false);
  r.revision = number_of(doc.value("header", json::object()), "revision");
  for (const auto& resp : doc.value("responses", json::array()))
    if (const auto it = resp.find("response_range"); it != resp.end())
      for (const auto& kv : it->value("kvs", json::array())) r.ranged.push_back(kv_of(kv));
  return r;
}

std::vector<member_status> etcd_client::status_of_members() {
  std::vector<member_status> out;
  for (size_t m = 0; m < endpoints_.size(); ++m) {
    member_status s;
    s.endpoint = endpoints_[m];
    std::string failure;
    const auto answer = post_to(m, "/v3/maintenance/status", "{}", failure);
    if (!failure.empty()) {
      s.error = failure;
    } else {
      const auto doc = json::parse(answer);
      s.up = !doc.contains("error");
      s.error = doc.value("message", "");
      s.version = doc.value("version", "");
      s.member_id = unsigned_of(doc.value("header", json::object()), "member_id");
      s.leader_id = unsigned_of(doc, "leader");
      s.db_size = number_of(doc, "dbSize");
      s.raft_term = number_of(doc, "raftTerm");
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace msomni::store
