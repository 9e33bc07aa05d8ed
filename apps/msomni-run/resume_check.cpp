// check_resume: reads the newest parseable manifest of a checkpoint root and compares the
// config it records with the resuming one (see resume_check.hpp).
#include "resume_check.hpp"

#include "checkpoint_error.hpp"
#include "config/config_loader.hpp"
#include "manifest.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace msomni::apps {

namespace fs = std::filesystem;

std::optional<resume_check> check_resume(const config::job_config& cfg, const fs::path& checkpoint_dir) {
  std::error_code ec;
  if (!fs::is_directory(checkpoint_dir, ec)) return std::nullopt;
  std::vector<uint64_t> steps;
  for (const auto& e : fs::directory_iterator(checkpoint_dir, ec))
    if (const auto step = ckpt::parse_checkpoint_dir_name(e.path().filename().string()); step && e.is_directory(ec))
      steps.push_back(*step);
  std::sort(steps.rbegin(), steps.rend());
  for (const auto step : steps) {
    const auto path = checkpoint_dir / ckpt::checkpoint_dir_name(step) / std::string(ckpt::manifest_file);
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;  // a staging leftover or a damaged checkpoint: the ranks skip it too
    std::ostringstream text;
    text << in.rdbuf();
    try {
      const auto m = ckpt::parse_manifest(text.str(), path.string());
      return resume_check{step, path, config::compare_for_resume(m.meta.config, cfg.resolved_values)};
    } catch (const ckpt::checkpoint_error&) {
      continue;  // torn or edited: never loaded, so not what the ranks resume from
    }
  }
  return std::nullopt;
}

std::vector<std::string> refusal_lines(const config::job_config& cfg, const resume_check& r) {
  std::vector<std::string> out;
  for (const auto& c : r.comparison.refused) {
    const auto was = c.saved.empty() ? std::string("absent") : c.saved;
    const auto is = c.now.empty() ? std::string("absent") : c.now;
    out.push_back(config::located(cfg, c.key,
                                  "is " + is + " but the checkpoint at step " + std::to_string(r.step) +
                                      " was written with " + was +
                                      "; it decides what the saved state means, so it may not change on a resume")
                      .to_string());
  }
  return out;
}

std::string accepted_summary(const resume_check& r) {
  std::string out;
  for (const auto& c : r.comparison.accepted) out += (out.empty() ? "" : ", ") + config::describe(c);
  return out;
}

}  // namespace msomni::apps
