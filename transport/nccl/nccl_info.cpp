// probe_backends: asks UCX and (when compiled) NCCL for their versions.
#include "nccl/nccl_info.hpp"

#include <ucp/api/ucp.h>
#ifdef MSOMNI_WITH_NCCL
#include <nccl.h>
#endif

namespace msomni::transport {

backend_report probe_backends() {
  backend_report r;
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  r.ucx_version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
#ifdef MSOMNI_WITH_NCCL
  r.nccl_compiled = true;
  int v = 0;
  if (ncclGetVersion(&v) == ncclSuccess)
    r.nccl_version = std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
                     std::to_string(v % 100);
#endif
  return r;
}

}  // namespace msomni::transport
