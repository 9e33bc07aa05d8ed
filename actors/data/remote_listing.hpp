// Listing the shards of a remote source (internal to msomni_data): an s3:// prefix by
// ListObjectsV2, an http(s):// directory or shard list by its text (see remote_storage.hpp).
#pragma once

#include "shard_cache.hpp"

#include <functional>
#include <string>
#include <vector>

namespace msomni::data {

// The *.tar objects directly under an s3:// prefix (or the one object a .tar uri names);
// `remember` gets each listed object's size and ETag. Empty when the bucket does not exist;
// throws std::runtime_error for another refusal, with the store's code and message.
std::vector<std::string> list_s3(const std::string& uri, const std::function<void(const object_key&)>& remember);

// The shards an http(s):// uri names: itself when it ends in .tar, else the lines of its shard
// list (<uri>shards.txt for a directory). Empty when the list does not exist.
std::vector<std::string> list_http(const std::string& uri);

}  // namespace msomni::data
