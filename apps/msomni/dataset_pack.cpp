// `msomni dataset pack`: a plain folder of captioned images or videos to WebDataset shards
// (see dataset_tools.hpp). Every file whose bytes are media of the chosen modality
// (media_format.hpp: judged by content, not by name) and whose caption is found is decoded
// once by the pipeline's own decoder; when it decodes, it becomes one sample, KEY.EXT +
// KEY.txt, KEY being its path under the folder without the extension ('/' kept, other dots as
// '_', since the reader cuts a member name at the first dot after the last '/'). The member
// keeps its own extension (.mov, .webm, .jpeg) when that names the format its bytes are;
// otherwise the extension follows the bytes, so a PNG named .jpeg is packed as .png and a
// JPEG named .dat as .jpg. What training would refuse is refused here, with the cause.
#include "dataset_tools.hpp"

#include "durable_io.hpp"
#include "media_decoder.hpp"
#include "media_format.hpp"
#include "sample.hpp"
#include "tar_format.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

namespace msomni::cli {
namespace {

namespace fs = std::filesystem;

// Longest member name a ustar header holds in its name field.
constexpr size_t member_name_max = 99;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// The member extension for bytes of `format` in a file named with `ext` (".MOV"): its own
// when it names that format, else the format's.
std::string member_extension(const std::string& ext, std::string_view format) {
  const std::string own = ext.empty() ? ext : ext.substr(1);
  return data::format_of_extension(own) == format ? own : std::string(format);
}

// How to make a refused file into one msomni decodes.
std::string conversion_hint(modality kind) {
  return kind == modality::image ? "; convert it with e.g. `ffmpeg -i FILE FILE.png`"
                                 : "; convert it with e.g. `ffmpeg -i FILE -c:v libx264 -pix_fmt yuv420p FILE.mp4`";
}

// The whole file, or nullopt with errno's reason in `why`.
std::optional<std::vector<uint8_t>> read_bytes(const fs::path& p, std::string& why) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    why = std::string("unreadable: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    why = "unreadable: read error";
    return std::nullopt;
  }
  return bytes;
}

// "cats/tabby cat.v2" -> "cats/tabby cat_v2": the reader's key is the name up to the first
// dot after the last '/'.
std::string key_of(const fs::path& relative_stem) {
  std::string key = relative_stem.generic_string();
  const size_t slash = key.rfind('/');
  std::replace(key.begin() + std::ptrdiff_t(slash == std::string::npos ? 0 : slash + 1), key.end(), '.', '_');
  return key;
}

std::string caption_from_stem(const std::string& stem) {
  std::string c = stem;
  std::replace(c.begin(), c.end(), '_', ' ');
  std::replace(c.begin(), c.end(), '-', ' ');
  return c;
}

struct sample_file {
  fs::path media;
  std::string key, ext;  // ext: the member's extension (its own when it names what the bytes are)
  std::vector<uint8_t> bytes;
  std::string caption;
};

std::string shard_name(size_t index) {
  std::ostringstream os;
  os << "shard-" << std::setw(6) << std::setfill('0') << index << ".tar";
  return os.str();
}

void fsync_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("open " + p.string() + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error("fsync " + p.string() + ": " + std::strerror(saved));
}

// One shard: written as .NAME.tmp, fsynced, renamed (the directory fsynced with it).
std::string write_shard(const fs::path& out, size_t index, const std::vector<sample_file>& samples) {
  const fs::path final_path = out / shard_name(index);
  const fs::path tmp = out / ("." + shard_name(index) + ".tmp");
  {
    data::tar_writer tar(tmp.string());
    for (const auto& s : samples) {
      tar.add(s.key + "." + s.ext, s.bytes);
      tar.add(s.key + ".txt", std::span(reinterpret_cast<const uint8_t*>(s.caption.data()), s.caption.size()));
    }
    tar.finish();
  }
  fsync_file(tmp);
  ckpt::durable_rename(tmp, final_path, nullptr);
  return final_path.string();
}

}  // namespace

pack_result pack_dataset(const pack_options& o) {
  std::error_code ec;
  if (!fs::is_directory(o.source, ec)) throw std::runtime_error(o.source.string() + " is not a directory");
  if (o.per_shard == 0) throw std::runtime_error("--per-shard must be at least 1");
  if (fs::is_directory(o.out, ec))
    for (const auto& e : fs::directory_iterator(o.out, ec))
      if (e.path().extension() == ".tar")
        throw std::runtime_error(o.out.string() + " already holds shards (" + e.path().filename().string() +
                                 "); choose an empty or new directory, nothing is overwritten");
  if (fs::exists(o.out, ec) && !fs::is_directory(o.out, ec)) throw std::runtime_error(o.out.string() + " is not a directory");
  const fs::path out_abs = fs::weakly_canonical(o.out, ec);

  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(o.source, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && fs::weakly_canonical(it->path(), ec) == out_abs) {
      it.disable_recursion_pending();  // OUT inside the folder: its shards are no input
      continue;
    }
    if (it->is_regular_file(ec)) files.push_back(it->path());
  }
  if (ec) throw std::runtime_error("walking " + o.source.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());

  pack_result r;
  std::set<std::string> keys;
  std::vector<sample_file> pending;
  fs::create_directories(o.out);
  data::decode_options decode;
  decode.image_size = 16;
  decode.video_frames = 2;
  decode.max_image_pixels = o.limits.max_image_pixels;
  decode.max_video_pixels = o.limits.max_video_pixels;
  data::media_decoder decoder(decode);
  std::set<fs::path> media_stems;  // every non-caption file, judged or refused: its caption is accounted for
  for (const auto& f : files) {
    const std::string ext = lower(f.extension().string());
    if (ext == ".txt") continue;  // a caption: taken with its media below, or reported after
    media_stems.insert(fs::path(f).replace_extension());
    std::error_code size_ec;
    const uint64_t size = fs::file_size(f, size_ec);
    if (!size_ec && size > o.limits.max_sample_bytes) {
      r.skipped.push_back({f.string(), std::to_string(size) + " bytes, over --max-sample-bytes " +
                                           std::to_string(o.limits.max_sample_bytes) + " (training refuses it as too_large)"});
      continue;
    }
    std::string why;
    auto bytes = read_bytes(f, why);
    if (!bytes) {
      r.skipped.push_back({f.string(), why});
      continue;
    }
    const std::string_view format = data::sniff_media_format(*bytes);
    if (!data::accepted_format(o.kind, format)) {
      const bool named_media = !data::format_of_extension(ext.empty() ? ext : ext.substr(1)).empty();
      if (format.empty() && !named_media) {
        r.skipped.push_back({f.string(), std::string("not ") + (o.kind == modality::image ? "an image" : "a video") +
                                             " msomni decodes, by its bytes (accepted: " +
                                             std::string(data::accepted_extensions(o.kind)) + ")"});
      } else if (format.empty()) {
        r.skipped.push_back({f.string(), "named " + ext + " but its bytes are no " + to_string(o.kind) +
                                             " format msomni decodes" + conversion_hint(o.kind)});
      } else {
        r.skipped.push_back({f.string(), "its bytes are a " + std::string(data::format_label(format)) + " " +
                                             to_string(data::kind_of_format(format)) + "; pack " +
                                             to_string(data::kind_of_format(format)) + "s with --" +
                                             to_string(data::kind_of_format(format)) + "s"});
      }
      continue;
    }
    sample_file s;
    s.media = f;
    if (o.caption_from_name) {
      s.caption = caption_from_stem(f.stem().string());
    } else {
      fs::path caption = f;
      caption.replace_extension(".txt");
      if (!fs::is_regular_file(caption, ec)) {
        r.skipped.push_back({f.string(), "no caption (expected " + caption.filename().string() + ", or --caption-from name)"});
        continue;
      }
      const auto text = read_bytes(caption, why);
      if (!text) {
        r.skipped.push_back({caption.string(), why});
        continue;
      }
      s.caption.assign(text->begin(), text->end());
    }
    if (std::all_of(s.caption.begin(), s.caption.end(), [](unsigned char c) { return std::isspace(c); })) {
      r.skipped.push_back({f.string(), "empty caption"});
      continue;
    }
    if (!data::valid_utf8(s.caption)) {
      r.skipped.push_back({f.string(), "caption is not valid UTF-8"});
      continue;
    }
    s.ext = member_extension(ext, format);
    // Decoded once, as training decodes it: what would be refused there is refused here.
    data::raw_sample probe;
    probe.kind = o.kind;
    probe.key = f.string();
    probe.media_ext = s.ext;
    probe.caption = s.caption;
    probe.media = std::move(*bytes);
    const data::decoded_sample decoded = decoder.decode(probe, false);
    if (decoded.bad) {
      r.skipped.push_back({f.string(), std::string(data::to_string(decoded.reason)) + ": " + decoded.cause +
                                           (decoded.reason == data::bad_reason::too_many_pixels ? "" : conversion_hint(o.kind))});
      continue;
    }
    s.bytes = std::move(probe.media);
    s.key = key_of(fs::relative(f, o.source).replace_extension());
    // A key must be unique in the dataset and fit a ustar name with its extension.
    if (keys.count(s.key) || s.key.size() + 1 + s.ext.size() > member_name_max) {
      s.key = "sample-" + std::to_string(r.packed);
      while (keys.count(s.key)) s.key += "_";
    }
    keys.insert(s.key);
    pending.push_back(std::move(s));
    ++r.packed;
    if (pending.size() == o.per_shard) {
      r.shards.push_back(write_shard(o.out, r.shards.size(), pending));
      pending.clear();
    }
  }
  if (!pending.empty()) r.shards.push_back(write_shard(o.out, r.shards.size(), pending));
  if (!o.caption_from_name) {
    for (const auto& f : files)
      if (lower(f.extension().string()) == ".txt" && !media_stems.count(fs::path(f).replace_extension()))
        r.skipped.push_back({f.string(), "a caption without a media file of the same name"});
  }
  return r;
}

}  // namespace msomni::cli
