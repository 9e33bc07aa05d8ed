// Grouping tar members into samples and assembling raw samples (see tar_sample_assembler.hpp).
#include "tar_sample_assembler.hpp"

#include "media_format.hpp"

#include <algorithm>

namespace msomni::data {

std::pair<std::string, std::string> split_member(const std::string& name) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos) return {name, ""};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

member_use use_of(const std::string& ext, modality kind) {
  if (ext == "txt") return member_use::caption;
  if (kind != modality::text && accepted_format(kind, format_of_extension(ext))) return member_use::media;
  return member_use::none;
}

std::optional<shard_sample> sample_grouper::add(const tar_member& m) {
  std::string key = split_member(m.name).first;
  std::optional<shard_sample> done;
  if (!current_.members.empty() && key != current_.key) done = std::exchange(current_, {});
  current_.key = std::move(key);
  current_.members.push_back(m);
  return done;
}

std::optional<shard_sample> sample_grouper::finish() {
  if (current_.members.empty()) return std::nullopt;
  return std::exchange(current_, {});
}

shard_listing group_samples(const tar_listing& listing) {
  shard_listing out;
  sample_grouper grouper;
  for (const auto& m : listing.members)
    if (auto s = grouper.add(m)) out.push_back(std::move(*s));
  if (auto s = grouper.finish()) out.push_back(std::move(*s));
  return out;
}

sample_reads plan_reads(const shard_sample& s, modality kind, uint64_t max_member_bytes) {
  sample_reads out;
  uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
  for (const auto& m : s.members) {
    const member_use u = use_of(split_member(m.name).second, kind);
    if (u == member_use::none) continue;
    if (m.size > max_member_bytes) {
      out.reads.clear();
      out.too_large = &m;
      return out;
    }
    out.reads.push_back({&m, u});
    lo = std::min(lo, m.data_offset);
    hi = std::max(hi, m.data_offset + m.size);
    sum += m.size;
  }
  if (out.reads.size() > 1 && hi - lo <= sum + 2 * tar_block_size * s.members.size()) {
    out.span_offset = lo;
    out.span_bytes = hi - lo;
  }
  return out;
}

std::string too_large_cause(const tar_member& m, uint64_t max_member_bytes) {
  return m.name + " is " + std::to_string(m.size) + " bytes, over io.max_sample_bytes " + std::to_string(max_member_bytes);
}

void raw_sample_assembler::add(const member_read& r, std::vector<uint8_t> bytes, bool complete) {
  if (r.use == member_use::caption) {
    s_.caption.assign(bytes.begin(), bytes.end());
    has_caption_ = complete;
  } else if (r.use == member_use::media) {
    // A zero-byte media member is as absent as a missing one (missing_member).
    s_.media = std::move(bytes);
    s_.media_ext = split_member(r.member->name).second;
    has_media_ = complete && !s_.media.empty();
  }
}

raw_sample raw_sample_assembler::too_large(const tar_member& m, uint64_t max_member_bytes) && {
  s_.bad = true;
  s_.reason = bad_reason::too_large;
  s_.cause = too_large_cause(m, max_member_bytes);
  return std::move(s_);
}

raw_sample raw_sample_assembler::finish() && {
  check_raw_sample(s_, has_media_, has_caption_);
  return std::move(s_);
}

}  // namespace msomni::data
