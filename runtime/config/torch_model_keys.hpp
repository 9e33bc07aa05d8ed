// The [model] keys of model.name = "torch" (docs/torch_models.md): torch_file, torch_class,
// torch_args and torch_python. Read after model.name; with another model any of them is an
// error, and with "torch" the keys that size fuyu-tiny (d_model, n_layers, n_heads, d_ff,
// vocab_size) and model.plugin are refused when given, since they would change nothing.
#pragma once

#include "config/config_reader.hpp"
#include "config/job_config.hpp"

namespace msomni::config {

void read_torch_model_keys(table_reader& r, model_section& s);

}  // namespace msomni::config
