// A small valid job config for tests, and helpers to vary it.
#pragma once

#include <string>

namespace msomni::testing {

inline std::string valid_config_text() {
  return R"([job]
name = "unit"

[[data.sources]]
name = "img"
uri = "synthetic://shapes"
modality = "image"
weight = 2.0

[[data.sources]]
name = "txt"
uri = "synthetic://text"
modality = "text"

[training]
global_batch = 8
micro_batch = 2
grad_accum = 2
steps = 10
lr = 0.001
seed = 7

[elasticity]
replicas = 2
min_replicas = 1
max_replicas = 4
)";
}

}  // namespace msomni::testing
