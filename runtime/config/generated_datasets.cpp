// generated_datasets (see generated_datasets.hpp).
#include "config/generated_datasets.hpp"

#include <cstdlib>
#include <stdexcept>

namespace msomni::config {

namespace fs = std::filesystem;

namespace {

constexpr const char* scheme = "generated://";

// The presets: name -> generator arguments. Changing one renames it (e.g. quickstart-v2),
// so a cache of the old bytes is never taken for the new ones.
const std::vector<generated_dataset>& presets() {
  static const std::vector<generated_dataset> all{
      {"quickstart",
       {"--seed", "1234", "--images", "400", "--videos", "120", "--texts", "200", "--image-size", "32",
        "--video-size", "32", "--per-shard", "50"}},
      // Videos that cost more to decode than a small model's step: 128 px, 48 frames in one
      // GOP, of which a job samples a few (the data benchmarks and the downgrade tests).
      {"video-heavy",
       {"--seed", "77", "--images", "48", "--videos", "96", "--texts", "48", "--image-size", "32",
        "--video-size", "128", "--video-length", "48", "--gop", "48", "--per-shard", "24"}},
  };
  return all;
}

}  // namespace

std::optional<generated_dataset> generated_preset(const std::string& uri) {
  if (uri.rfind(scheme, 0) != 0) return std::nullopt;
  const auto rest = uri.substr(std::string(scheme).size());
  const auto slash = rest.find('/');
  const auto name = rest.substr(0, slash);
  const auto part = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (part != "images" && part != "videos" && part != "text")
    throw std::invalid_argument("generated:// needs a part: generated://" + name + "/images, /videos or /text");
  for (const auto& p : presets())
    if (p.preset == name) return p;
  std::string known;
  for (const auto& p : presets()) known += (known.empty() ? "" : ", ") + p.preset;
  throw std::invalid_argument("unknown generated dataset \"" + name + "\" (known: " + known + ")");
}

fs::path cache_dir() {
  if (const char* d = std::getenv("MSOMNI_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return fs::path(d) / "msomni";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "msomni";
  return fs::temp_directory_path() / "msomni-cache";
}

fs::path generated_dir(const std::string& preset) { return cache_dir() / "datasets" / preset; }

fs::path generated_path(const std::string& uri) {
  const auto p = generated_preset(uri);
  if (!p) throw std::invalid_argument(uri + " is not a generated:// uri");
  return generated_dir(p->preset) / uri.substr(uri.rfind('/') + 1);
}

bool generated_ready(const std::string& preset) {
  std::error_code ec;
  return fs::exists(generated_dir(preset) / ".generated", ec);
}

}  // namespace msomni::config
