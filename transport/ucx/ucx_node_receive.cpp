// ucx_node's receiving side: every active message is checked (header, size, known
// endpoint), kept from handlers until its peer is up, and then handed over: eager frames
// in place, bulk frames into the buffer the receiver chooses (by rendezvous when large).
#include "ucx/ucx_node_impl.hpp"

#include <cstring>

namespace msomni::transport {

using namespace detail;

namespace {

void recv_done(void* request, ucs_status_t status, size_t, void* user) {
  std::unique_ptr<recv_ctx> ctx(static_cast<recv_ctx*>(user));
  auto* self = ctx->owner;
  if (status == UCS_OK) {
    self->counters.frames_received++;
    self->counters.bytes_received += ctx->header.payload_size;
  }
  if (self->h.on_bulk_done) self->h.on_bulk_done(ctx->peer, ctx->header, ctx->buffer, status == UCS_OK);
  ucp_request_free(request);
}

}  // namespace

ucs_status_t ucx_node::impl::on_am(const void* header, size_t header_length, void* data,
                                   size_t length, const ucp_am_recv_param_t* param) {
  decode_error why;
  const auto hdr = decode_header({static_cast<const std::byte*>(header), header_length}, why);
  const bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  // Returning UCS_OK without ucp_am_recv_data_nbx drops a rendezvous descriptor and completes
  // the sender (ucp_def.h). Calling ucp_am_data_release as well dropped it twice: the sender
  // got two acks and UCX aborted the process (ucp_rndv_ats_handler assertion).
  auto release = [] { return UCS_OK; };
  if (!hdr) {
    drop(to_string(why));
    return release();
  }
  if (hdr->payload_size != length) {
    drop("payload_size_mismatch");
    return release();
  }
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
    drop("no reply endpoint");
    return release();
  }
  ucp_ep_h ep = param->reply_ep;
  auto it = by_ep.find(ep);
  if (it == by_ep.end()) {
    drop("unknown endpoint");
    return release();
  }
  auto& st = it->second;
  st.liveness.last_heard = st.liveness.last_frame = steady::now();
  if (!st.up) {
    // Nothing from a peer that is not up reaches a handler: only its HELLO exchange counts.
    if (rndv) {
      drop("rendezvous frame before hello");
      if (!st.secret.empty()) refuse(ep, "sent data before proving the job secret");
      return release();
    }
    on_hello_frame(ep, st, *hdr, {static_cast<const std::byte*>(data), length});
    return UCS_OK;
  }
  if (hdr->kind == frame_kind::hello || hdr->kind == frame_kind::challenge ||
      hdr->kind == frame_kind::challenge_reply || hdr->kind == frame_kind::proof)
    return release();  // a repeated hello of a peer that is up
  counters.frames_received++;
  switch (hdr->kind) {
    case frame_kind::keepalive: return UCS_OK;
    case frame_kind::goodbye: mark_down(ep, peer_left_reason); return UCS_OK;
    case frame_kind::actor_message:
      counters.bytes_received += length;
      if (rndv) return release();  // actor messages are always eager
      if (h.on_frame) h.on_frame(st.name, *hdr, {static_cast<const std::byte*>(data), length});
      return UCS_OK;
    default: break;
  }
  // bulk / collective
  std::byte* buffer = h.on_bulk_buffer ? h.on_bulk_buffer(st.name, *hdr) : nullptr;
  if (!buffer) {
    drop("no buffer for bulk frame");
    return release();
  }
  if (!rndv) {
    if (length) std::memcpy(buffer, data, length);
    counters.bytes_received += length;
    if (h.on_bulk_done) h.on_bulk_done(st.name, *hdr, buffer, true);
    return UCS_OK;
  }
  auto ctx = std::make_unique<recv_ctx>();
  ctx->owner = this;
  ctx->peer = st.name;
  ctx->header = *hdr;
  ctx->buffer = buffer;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.recv_am = recv_done;
  p.user_data = ctx.get();
  void* req = ucp_am_recv_data_nbx(worker, data, buffer, length, &p);
  if (req == nullptr) {
    counters.bytes_received += length;
    if (h.on_bulk_done) h.on_bulk_done(st.name, *hdr, buffer, true);
    return UCS_OK;
  }
  if (UCS_PTR_IS_ERR(req)) {
    if (h.on_bulk_done) h.on_bulk_done(st.name, *hdr, buffer, false);
    return UCS_OK;
  }
  ctx.release();
  return UCS_OK;
}

}  // namespace msomni::transport
