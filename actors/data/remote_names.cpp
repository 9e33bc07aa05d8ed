// Remote uris to requests (see remote_names.hpp).
#include "remote_names.hpp"

#include "remote_io.hpp"

namespace msomni::data {

bool is_s3(const std::string& uri) { return uri.rfind("s3://", 0) == 0; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// "s3://bucket/key" -> (bucket, key)
std::pair<std::string, std::string> bucket_key(const std::string& uri) {
  const std::string rest = uri.substr(5);
  const auto slash = rest.find('/');
  if (slash == std::string::npos) return {rest, ""};
  return {rest.substr(0, slash), rest.substr(slash + 1)};
}

std::string object_url(const std::string& uri) {
  if (!is_s3(uri)) return uri;
  const auto [bucket, key] = bucket_key(uri);
  return remote_io().s3_endpoint + "/" + uri_encode(bucket) + "/" + uri_encode(key, false);
}

}  // namespace msomni::data
