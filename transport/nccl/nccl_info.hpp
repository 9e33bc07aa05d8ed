// Which collective backends this build has: the UCX ring always, NCCL when built with CUDA.
#pragma once

#include <string>

namespace msomni::transport {

struct backend_report {
  std::string ucx_version;   // e.g. "1.13.1"
  bool nccl_compiled = false;
  std::string nccl_version;  // e.g. "2.28.3", empty when not compiled
};

backend_report probe_backends();

}  // namespace msomni::transport
