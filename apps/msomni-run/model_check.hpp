// The model a job names, checked by msomni-run before anything starts: model.name must be a
// built-in model or one that model.plugin registers. With --dry-run the model is also built
// once on the CPU, so the plan can show its parameter count and memory estimate. A torch
// model is always built and run on a probe batch (torch_module_check.hpp), dry run or not.
#pragma once

#include "config/config_error.hpp"
#include "config/job_config.hpp"
#include "model/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::apps {

struct model_summary {
  std::string name;
  std::string plugin_path;               // as opened; empty for a built-in model
  std::vector<std::string> registered;   // the names the plugin registered
  std::vector<std::string> declared_keys;  // "model.KEY: TYPE in [MIN, MAX], default D: description"
  std::string torch_module;              // model.name = "torch": the module, its Python and the probe
  bool built = false;                    // parameters and memory below are known
  int64_t parameters = 0;
  model::memory_estimate memory;         // one rank, one micro-batch of model.max_seq_len positions
};

// Errors located at model.plugin or model.name; empty when the model can be created.
// `build` also creates the model (a plugin's only: built-in models are sized by the plan).
std::vector<config::config_error> check_model(const config::job_config& cfg, bool build, model_summary& out);

// The plan's lines about the checked model.
std::string render_model_summary(const model_summary& s, const config::job_config& cfg);

}  // namespace msomni::apps
