// Shard patterns in a data source's uri: `shards/shard-00000?.tar`, `part-{a,b}/x.tar`,
// `shard-{000..009}.tar`. Braces expand first (comma lists and integer ranges, zero padded
// when an end is written with leading zeros, nested allowed), then each expansion's file
// name is matched as a glob (`*`, `?`, `[...]`, fnmatch(3) rules; a leading dot is matched
// only by a dot) against the regular files of its directory. The directory part takes
// braces but no glob characters. The result is every matching .tar file, sorted by name,
// each once: the shard list every rank and the config check see.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace msomni::shard_pattern {

// The most names one pattern may expand to (braces) before it is refused as malformed.
inline constexpr size_t expansions_max = 100000;

// True when `text` holds a pattern character: * ? [ {.
bool is_pattern(std::string_view text);

// The brace expansions of `pattern`, in written order. Throws std::invalid_argument with the
// reason for an unclosed or stray brace, an empty brace, a malformed range, or more than
// expansions_max names.
std::vector<std::string> expand_braces(std::string_view pattern);

// The .tar files `pattern` names (see above), sorted and without duplicates. Throws
// std::invalid_argument for a malformed pattern (expand_braces, or glob characters in the
// directory part). A directory that does not exist matches nothing.
std::vector<std::string> match_files(const std::string& pattern);

}  // namespace msomni::shard_pattern
