// usable_source_problem (see source_probe.hpp).
#include "source_probe.hpp"

#include "media_format.hpp"

#include "sample.hpp"
#include "tar_sample_assembler.hpp"

#include <set>

namespace msomni::data {
namespace {

// What the walk saw, for the reason when nothing was usable.
struct seen {
  size_t shards = 0, unreadable = 0, without_members = 0;
  uint64_t samples = 0, too_large = 0;
  std::set<std::string> extensions;  // at most 8, for the message
  std::string last_problem;          // the raw-stage reason of the last sample checked
};

std::string wanted(modality kind) {
  switch (kind) {
    case modality::image: return "an image (" + std::string(accepted_extensions(kind)) + ") and its .txt caption";
    case modality::video: return "a video (" + std::string(accepted_extensions(kind)) + ") and its .txt caption";
    case modality::text: return "a .txt caption";
  }
  return "?";
}

// One sample's members: usable when the raw checks pass on what it has. Media are not read.
bool usable(const byte_source& file, const shard_sample& smp, modality kind, uint64_t max_bytes, seen& w) {
  ++w.samples;
  const sample_reads plan = plan_reads(smp, kind, max_bytes);
  for (const auto& m : smp.members) {
    const std::string ext = split_member(m.name).second;
    if (w.extensions.size() < 8) w.extensions.insert(ext.empty() ? "(none)" : "." + ext);
    if (&m == plan.too_large) break;
  }
  if (plan.too_large) {
    ++w.too_large;
    return false;
  }
  raw_sample s;
  s.kind = kind;
  bool has_media = false, has_caption = false;
  for (const auto& r : plan.reads) {
    const tar_member& m = *r.member;
    if (r.use == member_use::media) has_media = has_media || m.size > 0;
    if (r.use == member_use::caption && m.size > 0) {
      has_caption = true;
      // A long caption is taken as text without reading it all: the probe stays cheap.
      s.caption.resize(size_t(std::min<uint64_t>(m.size, probe_caption_bytes_max)));
      if (file.read_at(m.data_offset, s.caption.data(), s.caption.size()) != s.caption.size()) has_caption = false;
      if (m.size > probe_caption_bytes_max) s.caption = "long";
    }
  }
  if (check_raw_sample(s, has_media, has_caption)) return true;
  w.last_problem = to_string(s.reason);
  return false;
}

// Walks one shard's headers, sample by sample, until a usable one.
bool shard_has_usable(const byte_source& file, modality kind, uint64_t max_bytes, seen& w) {
  sample_grouper grouper;
  bool found = false;
  const tar_listing listing = list_tar(file, [&](const tar_member& m) {
    if (auto done = grouper.add(m)) found = usable(file, *done, kind, max_bytes, w);
    return !found;
  });
  if (!found)
    if (auto last = grouper.finish()) found = usable(file, *last, kind, max_bytes, w);
  if (listing.members.empty()) ++w.without_members;
  return found;
}

std::string plural(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

std::string usable_source_problem(const storage& st, const std::string& uri, modality kind, uint64_t max_sample_bytes) {
  const auto shards = st.list_shards(uri);
  const std::string head = "no usable sample in " + uri + ": ";
  if (shards.empty()) return head + "no .tar shards";
  seen w;
  for (const auto& path : shards) {
    ++w.shards;
    const auto file = st.open(path);
    if (!file) {
      ++w.unreadable;
      continue;
    }
    if (shard_has_usable(*file, kind, max_sample_bytes, w)) return "";
  }
  std::string why = head + plural(w.shards, "shard", "shards");
  if (w.unreadable == w.shards) return why + ", none can be opened";
  if (w.without_members + w.unreadable == w.shards)
    return why + ", all without a tar member (empty or not tar files)";
  why += " with " + plural(w.samples, "sample", "samples") + ", none has " + wanted(kind);
  std::string exts;
  for (const auto& e : w.extensions) exts += (exts.empty() ? "" : ", ") + e;
  why += " (members seen: " + exts + ")";
  if (w.too_large > 0) why += "; " + plural(w.too_large, "sample needs", "samples need") + " a member over io.max_sample_bytes";
  else if (!w.last_problem.empty() && w.last_problem != "missing_member") why += "; the last one checked: " + w.last_problem;
  return why;
}

}  // namespace msomni::data
