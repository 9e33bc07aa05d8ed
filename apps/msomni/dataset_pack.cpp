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

// Refuses a source that is no directory, --per-shard 0, and an OUT that is no directory or
// already holds shards. Returns OUT as a canonical path, to keep it out of the walk.
fs::path checked_output(const pack_options& o) {
  std::error_code ec;
  if (!fs::is_directory(o.source, ec)) throw std::runtime_error(o.source.string() + " is not a directory");
  if (o.per_shard == 0) throw std::runtime_error("--per-shard must be at least 1");
  if (fs::is_directory(o.out, ec))
    for (const auto& e : fs::directory_iterator(o.out, ec))
      if (e.path().extension() == ".tar")
        throw std::runtime_error(o.out.string() + " already holds shards (" + e.path().filename().string() +
                                 "); choose an empty or new directory, nothing is overwritten");
  if (fs::exists(o.out, ec) && !fs::is_directory(o.out, ec)) throw std::runtime_error(o.out.string() + " is not a directory");
  return fs::weakly_canonical(o.out, ec);
}

// Every regular file under `source`, none inside `out_abs` (OUT), sorted: the packing order.
std::vector<fs::path> files_under(const fs::path& source, const fs::path& out_abs) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(source, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && fs::weakly_canonical(it->path(), ec) == out_abs) {
      it.disable_recursion_pending();  // OUT inside the folder: its shards are no input
      continue;
    }
    if (it->is_regular_file(ec)) files.push_back(it->path());
  }
  if (ec) throw std::runtime_error("walking " + source.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// Why bytes of `format` (empty: none msomni knows) in a file named with `ext` are not packed
// as `kind`.
std::string wrong_format_reason(const std::string& ext, std::string_view format, modality kind) {
  const bool named_media = !data::format_of_extension(ext.empty() ? ext : ext.substr(1)).empty();
  if (format.empty() && !named_media)
    return std::string("not ") + (kind == modality::image ? "an image" : "a video") +
           " msomni decodes, by its bytes (accepted: " + std::string(data::accepted_extensions(kind)) + ")";
  if (format.empty())
    return "named " + ext + " but its bytes are no " + to_string(kind) + " format msomni decodes" + conversion_hint(kind);
  return "its bytes are a " + std::string(data::format_label(format)) + " " + to_string(data::kind_of_format(format)) +
         "; pack " + to_string(data::kind_of_format(format)) + "s with --" + to_string(data::kind_of_format(format)) + "s";
}

// The caption of media file `f` (from its name, or from the .txt beside it), or nullopt with
// the reason added to r.skipped.
std::optional<std::string> caption_of(const fs::path& f, const pack_options& o, pack_result& r) {
  std::string text;
  if (o.caption_from_name) {
    text = caption_from_stem(f.stem().string());
  } else {
    fs::path caption = f;
    caption.replace_extension(".txt");
    std::error_code ec;
    if (!fs::is_regular_file(caption, ec)) {
      r.skipped.push_back({f.string(), "no caption (expected " + caption.filename().string() + ", or --caption-from name)"});
      return std::nullopt;
    }
    std::string why;
    const auto bytes = read_bytes(caption, why);
    if (!bytes) {
      r.skipped.push_back({caption.string(), why});
      return std::nullopt;
    }
    text.assign(bytes->begin(), bytes->end());
  }
  if (std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); })) {
    r.skipped.push_back({f.string(), "empty caption"});
    return std::nullopt;
  }
  if (!data::valid_utf8(text)) {
    r.skipped.push_back({f.string(), "caption is not valid UTF-8"});
    return std::nullopt;
  }
  return text;
}

// Media file `f` (extension `ext`, lower case) judged as training would judge it: the sample
// to pack, key still unset, or nullopt with the reason added to r.skipped.
std::optional<sample_file> judged_sample(const fs::path& f, const std::string& ext, const pack_options& o,
                                         data::media_decoder& decoder, pack_result& r) {
  std::error_code size_ec;
  const uint64_t size = fs::file_size(f, size_ec);
  if (!size_ec && size > o.limits.max_sample_bytes) {
    r.skipped.push_back({f.string(), std::to_string(size) + " bytes, over --max-sample-bytes " +
                                         std::to_string(o.limits.max_sample_bytes) + " (training refuses it as too_large)"});
    return std::nullopt;
  }
  std::string why;
  auto bytes = read_bytes(f, why);
  if (!bytes) {
    r.skipped.push_back({f.string(), why});
    return std::nullopt;
  }
  const std::string_view format = data::sniff_media_format(*bytes);
  if (!data::accepted_format(o.kind, format)) {
    r.skipped.push_back({f.string(), wrong_format_reason(ext, format, o.kind)});
    return std::nullopt;
  }
  sample_file s;
  s.media = f;
  auto caption = caption_of(f, o, r);
  if (!caption) return std::nullopt;
  s.caption = std::move(*caption);
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
    return std::nullopt;
  }
  s.bytes = std::move(probe.media);
  return s;
}

// The sample's key: its name under the source, unless another sample has it or it does not
// fit a ustar name with its extension; then "sample-N" (N: the samples packed before it).
std::string unique_key(const fs::path& f, const std::string& ext, const pack_options& o,
                       const std::set<std::string>& keys, uint64_t packed) {
  std::string key = key_of(fs::relative(f, o.source).replace_extension());
  if (keys.count(key) || key.size() + 1 + ext.size() > member_name_max) {
    key = "sample-" + std::to_string(packed);
    while (keys.count(key)) key += "_";
  }
  return key;
}

}  // namespace

pack_result pack_dataset(const pack_options& o) {
  const fs::path out_abs = checked_output(o);
  const std::vector<fs::path> files = files_under(o.source, out_abs);

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
    auto s = judged_sample(f, ext, o, decoder, r);
    if (!s) continue;
    s->key = unique_key(f, s->ext, o, keys, r.packed);
    keys.insert(s->key);
    pending.push_back(std::move(*s));
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
