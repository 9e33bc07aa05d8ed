// msomni-rank's standalone mode (tests and benchmarks): prints "ADDR <name> <host:port>", reads
// "PEER <name> <addr>" lines up to "GO", forms a ring of all named processes (rank = sorted
// position), trains, prints one "STEP {json}" line per optimizer step, then
// "RESULT ok checksum=<hex>".
#pragma once

#include "config/config_loader.hpp"
#include "config/job_config.hpp"

#include <cstdint>
#include <string>

namespace msomni::apps {

struct standalone_options {
  std::string config_path, name, ckpt_dir;
  bool resume = false;
  int64_t steps = -1;  // -1: training.steps
};

// Returns the exit code: 0 ok, 1 runtime failure.
int run_standalone_rank(const config::job_config& cfg, const standalone_options& o);

}  // namespace msomni::apps
