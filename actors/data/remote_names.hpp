// How remote shard uris map to requests (internal to msomni_data): s3:// or http(s)://, an
// s3 uri's bucket and key, and the url an object is fetched from.
#pragma once

#include <string>
#include <utility>

namespace msomni::data {

bool is_s3(const std::string& uri);
bool ends_with(const std::string& s, const std::string& tail);
// "s3://bucket/key" -> (bucket, key)
std::pair<std::string, std::string> bucket_key(const std::string& uri);
// The url an object is read from: an s3 uri path-style under io.s3_endpoint, others as they are.
std::string object_url(const std::string& uri);

}  // namespace msomni::data
