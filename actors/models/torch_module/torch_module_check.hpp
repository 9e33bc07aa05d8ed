// The check msomni-run makes of a torch model before anything starts: the file exists, the
// interpreter starts and imports torch, the file imports, the class is an nn.Module, it
// constructs from model.torch_args, its parameters can be trained, and a training and an
// evaluation forward on the probe batch (probe_batch.hpp) return a finite scalar loss with a
// backward that works. Every failure is located at the [model] key it concerns and carries the
// user's FILE:LINE.
#pragma once

#include "config/config_error.hpp"
#include "config/job_config.hpp"
#include "model/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::models {

struct torch_module_summary {
  std::string description;  // "CLASS (FILE:LINE), Python X, torch Y"
  size_t tensors = 0;
  int64_t parameters = 0;
  // training.micro_batch x model.max_seq_len positions, with the activations the probe's
  // training forward saved for backward
  model::memory_estimate memory;
  std::string probe;              // "micro-batch B x (P patches + T tokens), loss L"
};

std::vector<config::config_error> check_torch_module(const config::job_config& cfg, torch_module_summary& out);

}  // namespace msomni::models
