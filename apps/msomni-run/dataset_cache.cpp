// ensure_generated_datasets (see dataset_cache.hpp).
#include "dataset_cache.hpp"

#include "config/generated_datasets.hpp"
#include "core/process.hpp"
#include "core/sibling_binary.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <stdexcept>
#include <vector>

namespace msomni::apps {

namespace fs = std::filesystem;

namespace {

std::string generator_binary() {
  return find_sibling_binary("MSOMNI_GEN_DATASET",
                             {"msomni-gen-dataset", "../../tools/dataset_gen/msomni-gen-dataset"});
}

// The generator's exit code (128 + a signal); throws when it cannot be started.
int run(const std::string& binary, const std::vector<std::string>& args) {
  process::spawn_options o;
  o.own_process_group = false;  // in ours: a Ctrl-C at the terminal stops it too
  return process::spawn(binary, args, o).wait()->shell_code();  // it gets none of our descriptors: the journals stay ours
}

}  // namespace

void ensure_generated_datasets(const config::job_config& cfg, std::ostream& log) {
  std::set<std::string> done;
  for (const auto& src : cfg.data.sources) {
    const auto preset = config::generated_preset(src.uri);
    if (!preset || done.count(preset->preset) || config::generated_ready(preset->preset)) continue;
    done.insert(preset->preset);
    const auto dir = config::generated_dir(preset->preset);
    const auto staging = fs::path(dir.string() + ".partial-" + std::to_string(::getpid()));
    log << "msomni-run: the " << preset->preset << " dataset is not in the cache yet; generating it into " << dir.string()
        << " (first use only)" << std::endl;
    fs::create_directories(dir.parent_path());
    fs::remove_all(staging);
    auto args = preset->generator_args;
    args.insert(args.begin(), {"--out", staging.string()});
    const int code = run(generator_binary(), args);
    if (code != 0) {
      fs::remove_all(staging);
      throw std::runtime_error("msomni-gen-dataset failed (exit " + std::to_string(code) + ") generating " + preset->preset);
    }
    std::ofstream(staging / ".generated") << "complete\n";
    std::error_code ec;
    if (!config::generated_ready(preset->preset)) fs::remove_all(dir, ec);  // an incomplete older attempt
    fs::rename(staging, dir, ec);  // another job may have finished first: keep theirs
    if (ec) fs::remove_all(staging);
    log << "msomni-run: " << preset->preset << " dataset ready in " << dir.string() << std::endl;
  }
}

}  // namespace msomni::apps
