// `msomni dataset check`: every shard of a source read the way a rank reads it, every
// sample checked and its media decoded by the pipeline's own decoder (see dataset_tools.hpp).
#include "dataset_tools.hpp"

#include "media_decoder.hpp"
#include "media_format.hpp"
#include "member_reads.hpp"
#include "sample.hpp"
#include "storage.hpp"
#include "tar_sample_assembler.hpp"

#include "core/log.hpp"
#include "core/shard_pattern.hpp"

extern "C" {
#include <libavutil/log.h>
}

#include <filesystem>
#include <optional>
#include <stdexcept>

namespace msomni::cli {
namespace {

namespace fs = std::filesystem;
using data::bad_reason;

void add_problem(check_result& r, const std::string& shard, const std::string& key, std::string problem,
                 std::string detail) {
  ++r.problems;
  if (r.listed.size() < check_problems_listed_max) r.listed.push_back({shard, key, std::move(problem), std::move(detail)});
}

// The modality a sample's members make it: its media member's, else text.
modality inferred_kind(const data::shard_sample& s) {
  for (const auto& m : s.members) {
    const std::string ext = data::split_member(m.name).second;
    if (data::use_of(ext, modality::image) == data::member_use::media) return modality::image;
    if (data::use_of(ext, modality::video) == data::member_use::media) return modality::video;
  }
  return modality::text;
}

// Reads the members a sample uses, one by one; nullopt (its problem added) when one is too
// large or runs past the end of the shard.
std::optional<data::raw_sample> read_sample(const data::byte_source& file, const std::string& shard,
                                            const data::shard_sample& smp, modality kind, uint64_t max_bytes,
                                            check_result& r) {
  data::raw_sample start;
  start.kind = kind;
  start.key = shard + "/" + smp.key;
  data::raw_sample_assembler sample(std::move(start));
  const data::sample_reads plan = data::plan_reads(smp, kind, max_bytes);
  if (plan.too_large) {
    add_problem(r, shard, smp.key, "too_large", data::too_large_cause(*plan.too_large, max_bytes));
    return std::nullopt;
  }
  if (const data::tar_member* cut = data::read_members(file, plan, sample)) {
    add_problem(r, shard, smp.key, "truncated_shard", cut->name + " runs past the end of the shard");
    return std::nullopt;
  }
  const bool has_caption = sample.has_caption();
  data::raw_sample s = std::move(sample).finish();
  if (s.bad) {
    std::string detail = s.reason == bad_reason::missing_member
                             ? std::string(has_caption ? "no media member of its modality (" : "no .txt caption (") +
                                   to_string(kind) + ")"
                         : s.reason == bad_reason::empty_caption ? "the caption is blank"
                                                                 : "the caption is not valid UTF-8";
    add_problem(r, shard, smp.key, data::to_string(s.reason), detail);
    return std::nullopt;
  }
  return s;
}

void check_sample(const data::byte_source& file, const std::string& shard, const data::shard_sample& smp, modality kind,
                  uint64_t max_bytes, data::media_decoder& decoder, check_result& r) {
  const auto read = read_sample(file, shard, smp, kind, max_bytes, r);
  if (!read) return;
  const data::raw_sample& s = *read;
  if (kind != modality::text) {
    const std::string_view sniffed = data::sniff_media_format(s.media);
    const auto choice = data::choose_media_format(kind, s.media_ext, s.media);
    if (choice.mismatched_name)
      add_problem(r, shard, smp.key, "mismatched_name",
                  std::string("named .") + s.media_ext + " but its bytes are " + std::string(data::format_label(sniffed)) +
                      " (the pipeline decodes it by its bytes and counts it)");
    const data::decoded_sample d = decoder.decode(s, false);
    if (d.bad) {
      const std::string detail = d.cause;
      add_problem(r, shard, smp.key, data::to_string(d.reason), detail);
      return;
    }
  }
  ++r.samples[size_t(kind)];
}

}  // namespace

check_result check_dataset(const std::string& uri, std::optional<modality> kind, const check_limits& limits) {
  const uint64_t max_sample_bytes = limits.max_sample_bytes;
  const auto storage = data::make_local_storage();
  const std::string path = uri.rfind("file://", 0) == 0 ? uri.substr(7) : uri;
  std::error_code ec;
  const auto shards = storage->list_shards(uri);  // throws for a malformed pattern
  if (shards.empty()) {
    if (fs::exists(path, ec)) throw std::invalid_argument(uri + " holds no .tar shards");
    throw std::invalid_argument(uri + (shard_pattern::is_pattern(path) ? " is a pattern that matches no shard" : " does not exist"));
  }
  check_result r;
  r.uri = uri;
  data::media_decoder decoder({32, 2, 64, limits.max_image_pixels, limits.max_video_pixels});
  // Every refusal is reported below with its shard and key; FFmpeg's own lines would repeat
  // them without saying which sample they are about.
  if (!log::enabled(log::level::debug)) av_log_set_level(AV_LOG_QUIET);
  for (const auto& p : shards) {
    const std::string shard = fs::path(p).filename().string();
    const auto file = storage->open(p);
    if (!file) {
      r.shards.emplace_back(p, 0);
      add_problem(r, shard, "", "unreadable_shard", "cannot open " + p);
      continue;
    }
    const data::tar_listing listing = data::list_tar(*file);
    if (listing.bad_header_runs > 0)
      add_problem(r, shard, "", "bad_tar_header",
                  std::to_string(listing.bad_header_runs) + " run(s) of blocks that are no valid tar header, skipped");
    if (listing.truncated) add_problem(r, shard, "", "truncated_shard", "a header or a member runs past the end");
    if (listing.members.empty() && listing.bad_header_runs == 0 && !listing.truncated)
      add_problem(r, shard, "", "empty_shard", "no tar member (an empty or non-tar file)");
    const data::shard_listing samples = data::group_samples(listing);
    r.shards.emplace_back(p, samples.size());
    for (const auto& smp : samples) check_sample(*file, shard, smp, kind.value_or(inferred_kind(smp)), max_sample_bytes, decoder, r);
  }
  return r;
}

}  // namespace msomni::cli
