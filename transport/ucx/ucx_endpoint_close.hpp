// Closing a UCX endpoint at once (UCP_EP_CLOSE_FLAG_FORCE) and waiting for the close on
// `worker`: a flush towards a dead same-host peer would never complete. Call on the thread
// that progresses `worker`.
#pragma once

#include <ucp/api/ucp.h>

namespace msomni::transport {

inline void close_endpoint_forced(ucp_worker_h worker, ucp_ep_h ep) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* req = ucp_ep_close_nbx(ep, &p);
  if (req && !UCS_PTR_IS_ERR(req)) {
    while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(worker);
    ucp_request_free(req);
  }
}

}  // namespace msomni::transport
