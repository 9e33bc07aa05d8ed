// A remote shard's member index as the text the local cache keeps, tied to the object's size
// and ETag so a changed object's index is never used (internal to msomni_data).
#pragma once

#include "shard_cache.hpp"
#include "tar_listing.hpp"

#include <memory>
#include <string>

namespace msomni::data {

std::string serialize(const object_key& k, const tar_listing& l);
// The listing `text` holds; null when it is damaged, of another version, or for another
// size or ETag of the object (or names a member past its end).
std::shared_ptr<const tar_listing> parse_index(const object_key& k, const std::string& text);

}  // namespace msomni::data
