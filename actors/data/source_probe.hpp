// Whether a source can yield a single sample, answered before a job starts: msomni-run asks
// this of every local source (through config::check_environment), so a source that could
// only ever fail — no shards, empty shards, members the decoder does not read, samples that
// lack their media or caption — is refused with the reason instead of failing every rank.
//
// Cheap by construction: shards are walked header by header and the walk stops at the first
// usable sample (one caption read, at most probe_caption_bytes_max); media are not decoded,
// so a source whose every image is damaged passes here and is caught by the ranks' repair
// rule (sample_repair.hpp).
#pragma once

#include "core/modality.hpp"
#include "storage.hpp"

#include <cstdint>
#include <string>

namespace msomni::data {

inline constexpr uint64_t probe_caption_bytes_max = 64 * 1024;

// "" when `uri` holds a sample of `kind` that passes the raw-stage checks (its media member
// and caption present, non-empty, at most max_sample_bytes, caption valid text); otherwise
// why not, naming what was found, e.g. "no usable sample in /d: 2 shards, all without a tar
// member (empty or not tar files)".
std::string usable_source_problem(const storage& st, const std::string& uri, modality kind, uint64_t max_sample_bytes);

}  // namespace msomni::data
