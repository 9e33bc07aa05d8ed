// `msomni dataset pack|check`: make WebDataset shards from a plain folder of captioned images
// or videos, and check shards as a job would read them (docs/datasets.md). The work is in
// dataset_pack.cpp and dataset_check.cpp; this file is the command line and the report.
#include "commands.hpp"
#include "dataset_tools.hpp"

#include <nlohmann/json.hpp>

#include "core/command_line.hpp"

#include <iostream>

namespace msomni::cli {

namespace {

namespace limits = config::limits;
constexpr limits::range<int64_t> per_shard_limit{1, 1 << 24};

// --max-sample-bytes, --max-image-pixels, --max-video-pixels: what a job refuses (io.* of its
// config), for pack and check alike; `consequence` says what becomes of a file past one.
struct limit_flags {
  int64_t bytes = int64_t(check_limits{}.max_sample_bytes);
  int64_t image_pixels = config::default_max_image_pixels;
  int64_t video_pixels = config::default_max_video_pixels;
  check_limits limits() const { return {uint64_t(bytes), uint64_t(image_pixels), uint64_t(video_pixels)}; }
};

void add_limit_flags(CLI::App& sub, limit_flags& f, const std::string& consequence) {
  command_line::add_number(sub, "--max-sample-bytes", f.bytes, limits::io::max_sample_bytes,
                           "a larger member is " + consequence + " (io.max_sample_bytes of a job)")
      ->type_name("BYTES");
  command_line::add_number(sub, "--max-image-pixels", f.image_pixels, limits::io::max_image_pixels,
                           "an image whose header states more pixels is " + consequence + " (io.max_image_pixels)")
      ->type_name("N");
  command_line::add_number(sub, "--max-video-pixels", f.video_pixels, limits::io::max_video_pixels,
                           "a video whose frames have more pixels is " + consequence + " (io.max_video_pixels)")
      ->type_name("N");
}

int cmd_pack(const pack_options& o, std::ostream& out, std::ostream& err) {
  const pack_result r = pack_dataset(o);
  out << "packed " << r.packed << (r.packed == 1 ? " sample" : " samples") << " into " << r.shards.size()
      << (r.shards.size() == 1 ? " shard" : " shards") << " in " << o.out.string() << "\n";
  for (const auto& s : r.shards) out << "  " << s << "\n";
  if (!r.skipped.empty()) {
    out << "skipped " << r.skipped.size() << ":\n";
    for (const auto& s : r.skipped) out << "  " << s.path << ": " << s.why << "\n";
  }
  if (r.packed == 0) {
    err << "msomni dataset pack: nothing packed from " << o.source.string() << "\n";
    return exit_failed;
  }
  return exit_ok;
}

int cmd_check(const std::string& uri, std::optional<modality> kind, const check_limits& limits, bool json,
              std::ostream& out) {
  const check_result r = check_dataset(uri, kind, limits);
  if (json) {
    nlohmann::json j;
    j["uri"] = r.uri;
    j["shards"] = nlohmann::json::array();
    for (const auto& [path, samples] : r.shards) j["shards"].push_back({{"path", path}, {"samples", samples}});
    for (int m = 0; m < modality_count; ++m) j["samples"][to_string(modality(m))] = r.samples[size_t(m)];
    j["problems_total"] = r.problems;
    j["problems"] = nlohmann::json::array();
    for (const auto& p : r.listed)
      j["problems"].push_back({{"shard", p.shard}, {"key", p.key}, {"problem", p.problem}, {"detail", p.detail}});
    j["clean"] = r.problems == 0;
    out << j.dump(2) << "\n";
  } else {
    out << r.shards.size() << (r.shards.size() == 1 ? " shard" : " shards") << " in " << r.uri << "\n";
    for (const auto& [path, samples] : r.shards) out << "  " << path << ": " << samples << " samples\n";
    out << "good samples:";
    for (int m = 0; m < modality_count; ++m) out << " " << to_string(modality(m)) << " " << r.samples[size_t(m)];
    out << "\n";
    if (r.problems == 0) {
      out << "no problems\n";
    } else {
      out << r.problems << (r.problems == 1 ? " problem" : " problems") << ":\n";
      for (const auto& p : r.listed)
        out << "  " << p.shard << (p.key.empty() ? "" : "/" + p.key) << ": " << p.problem << ": " << p.detail << "\n";
      if (r.listed.size() < r.problems) out << "  ... and " << r.problems - r.listed.size() << " more\n";
    }
  }
  return r.problems == 0 ? exit_ok : exit_failed;
}

}  // namespace

int run_dataset(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Make WebDataset shards from a folder of captioned images or videos, and check shards as a job reads "
               "them (docs/datasets.md).",
               "msomni dataset"};
  command_line::set_conventions(app);
  app.require_subcommand(1);

  pack_options po;
  std::string images, videos, caption_from = "txt";
  int64_t per_shard = 1000;
  auto* pack = app.add_subcommand("pack", "pack a folder of captioned images or videos into shards");
  pack->footer(command_line::wrap_lines(
      "Packs every image (--images: JPEG, PNG, WebP, GIF, BMP) or video (--videos: MP4, MOV, M4V, fragmented "
      "MP4, MKV, WebM, AVI) under DIR, judged by its bytes, recursively in name order, with its caption into "
      "OUT/shard-000000.tar, ... Each file is decoded once as training decodes it; what training would refuse is "
      "skipped, and every file skipped is listed with the cause. Exit 0 when it packed something, 1 when nothing was "
      "packed or OUT already holds shards (nothing is overwritten), 2 on bad usage.", 100));
  auto* source = pack->add_option("--images", images, "a folder of images")->type_name("DIR");
  pack->add_option("--videos", videos, "a folder of videos")->type_name("DIR")->excludes(source);
  pack->add_option("--out", po.out, "the directory the shards go to (new or without .tar files)")
      ->type_name("OUT")
      ->required();
  command_line::add_number(*pack, "--per-shard", per_shard, per_shard_limit, "samples per shard")->type_name("N");
  pack->add_option("--caption-from", caption_from,
                   "txt: the caption is the sibling file of the same stem (a.jpg + a.txt); name: it is made from the "
                   "file's stem (underscores and dashes as spaces)")
      ->check(CLI::IsMember({"txt", "name"}))
      ->capture_default_str();
  limit_flags pack_limits;
  add_limit_flags(*pack, pack_limits, "skipped, as training refuses it");

  std::string uri, modality_name;
  bool json = false;
  auto* check = app.add_subcommand("check", "read and decode every sample of shards as a job would, list the problems");
  check->footer(command_line::wrap_lines(
      "Reads every shard of URI (a directory, a .tar file or a pattern, as in a data source's uri) as a job would, "
      "decodes every sample and lists the shards, the good samples per modality and each problem with its shard and "
      "key. Exit 0 when clean, 1 when problems were found, 2 on bad usage.", 100));
  check->add_option("URI", uri, "a directory of shards, one .tar file, or a pattern (shards/shard-00000?.tar)")
      ->required();
  check->add_option("--modality", modality_name,
                    "every sample is of this modality (default: each sample's media member's extension says: an "
                    "image or a video extension, none: text)")
      ->check(CLI::IsMember({"image", "video", "text"}));
  limit_flags check_limits_flags;
  add_limit_flags(*check, check_limits_flags, "a problem (too_large, too_many_pixels)");
  check->add_flag("--json", json, "the report as one JSON object");

  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;
  try {
    if (pack->parsed()) {
      if (images.empty() == videos.empty())
        return command_line::refuse(app, "give one of --images DIR or --videos DIR", err);
      po.source = images.empty() ? videos : images;
      po.kind = images.empty() ? modality::video : modality::image;
      po.per_shard = uint64_t(per_shard);
      po.caption_from_name = caption_from == "name";
      po.limits = pack_limits.limits();
      return cmd_pack(po, out, err);
    }
    std::optional<modality> kind;
    if (modality_name == "image") kind = modality::image;
    if (modality_name == "video") kind = modality::video;
    if (modality_name == "text") kind = modality::text;
    try {
      return cmd_check(uri, kind, check_limits_flags.limits(), json, out);
    } catch (const std::invalid_argument& e) {
      return command_line::refuse(app, e.what(), err);
    }
  } catch (const std::exception& e) {
    err << "msomni dataset " << (pack->parsed() ? "pack" : "check") << ": " << e.what() << "\n";
    return exit_failed;
  }
}

}  // namespace msomni::cli
