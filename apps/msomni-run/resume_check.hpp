// Before any rank starts: may this config resume from the checkpoint root's newest
// checkpoint? The checkpoint's manifest holds the config that wrote it by key; the
// comparison is config::compare_for_resume's. A refusal names every differing key at the
// config's FILE:LINE:COL with both values; msomni-run then exits 2 (--dry-run too) and
// nothing starts. Accepted changes go into the resume event.
#pragma once

#include "config/job_config.hpp"
#include "config/resume_compatibility.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace msomni::apps {

struct resume_check {
  uint64_t step = 0;                     // the checkpoint compared with
  std::filesystem::path manifest_path;   // its manifest
  config::resume_comparison comparison;
};

// The newest checkpoint under `checkpoint_dir` whose manifest parses (the ranks load the
// newest that verifies: that one or, if its shards are damaged, an older one of the same
// run), compared with `cfg`. nullopt when the root holds no checkpoint.
std::optional<resume_check> check_resume(const config::job_config& cfg, const std::filesystem::path& checkpoint_dir);

// One line per refused key, located in the config ("job.toml:12:11: model.d_model: ...").
std::vector<std::string> refusal_lines(const config::job_config& cfg, const resume_check& r);

// The accepted changes, comma-separated ("training.steps 100 -> 200, training.lr ..."), or "".
std::string accepted_summary(const resume_check& r);

}  // namespace msomni::apps
