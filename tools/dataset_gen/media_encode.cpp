// JPEG/PNG/H.264-in-MP4 encoding to memory (see media_encode.hpp).
#include "media_encode.hpp"

#include "core/check.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include <cstring>
#include <memory>
#include <stdexcept>

namespace msomni::gen {
namespace {

struct codec_free { void operator()(AVCodecContext* c) const { avcodec_free_context(&c); } };
struct frame_free { void operator()(AVFrame* f) const { av_frame_free(&f); } };
struct packet_free { void operator()(AVPacket* p) const { av_packet_free(&p); } };
struct sws_free { void operator()(SwsContext* s) const { sws_freeContext(s); } };

template <class T>
T* need(T* p, const char* what) {
  if (!p) ::msomni::fail_call("FFmpeg", what, AVERROR(ENOMEM), "allocation or lookup failed", __FILE__, __LINE__);
  return p;
}

// An AVFrame of `fmt` holding `rgb` converted by swscale.
std::unique_ptr<AVFrame, frame_free> to_frame(const std::vector<uint8_t>& rgb, int size, AVPixelFormat fmt, SwsContext*& sws) {
  std::unique_ptr<AVFrame, frame_free> f{need(av_frame_alloc(), "av_frame_alloc")};
  f->format = fmt;
  f->width = f->height = size;
  MSOMNI_CHECK_FFMPEG(av_frame_get_buffer(f.get(), 0));
  const bool full = fmt == AV_PIX_FMT_YUVJ420P;
  sws = sws_getCachedContext(sws, size, size, AV_PIX_FMT_RGB24, size, size, full ? AV_PIX_FMT_YUV420P : fmt,
                             SWS_BILINEAR | SWS_ACCURATE_RND | SWS_BITEXACT, nullptr, nullptr, nullptr);
  need(sws, "sws_getCachedContext");
  const int* cs = sws_getCoefficients(SWS_CS_DEFAULT);
  sws_setColorspaceDetails(sws, cs, 1, cs, full ? 1 : 0, 0, 1 << 16, 1 << 16);
  const uint8_t* src[4] = {rgb.data(), nullptr, nullptr, nullptr};
  const int stride[4] = {size * 3, 0, 0, 0};
  MSOMNI_CHECK_FFMPEG(sws_scale(sws, src, stride, 0, size, f->data, f->linesize));
  return f;
}

// Seekable in-memory output for the MP4 muxer (it rewrites sizes in the header at the end).
struct memory_writer {
  std::vector<uint8_t> data;
  int64_t pos = 0;
};

int write_memory(void* opaque, uint8_t* buf, int n) {
  auto* w = static_cast<memory_writer*>(opaque);
  if (size_t(w->pos + n) > w->data.size()) w->data.resize(size_t(w->pos + n));
  std::memcpy(w->data.data() + w->pos, buf, size_t(n));
  w->pos += n;
  return n;
}

int64_t seek_memory(void* opaque, int64_t offset, int whence) {
  auto* w = static_cast<memory_writer*>(opaque);
  if (whence & AVSEEK_SIZE) return int64_t(w->data.size());
  const int64_t base = (whence & 3) == SEEK_CUR ? w->pos : (whence & 3) == SEEK_END ? int64_t(w->data.size()) : 0;
  if (base + offset < 0) return AVERROR(EINVAL);
  w->pos = base + offset;
  return w->pos;
}

}  // namespace

void quiet_ffmpeg_logs() { av_log_set_level(AV_LOG_ERROR); }

std::vector<uint8_t> encode_image(const std::vector<uint8_t>& rgb, int size, image_format fmt) {
  const bool png = fmt == image_format::png;
  const AVCodec* codec = need(avcodec_find_encoder(png ? AV_CODEC_ID_PNG : AV_CODEC_ID_MJPEG), "avcodec_find_encoder");
  std::unique_ptr<AVCodecContext, codec_free> ctx{need(avcodec_alloc_context3(codec), "avcodec_alloc_context3")};
  const AVPixelFormat pix = png ? AV_PIX_FMT_RGB24 : AV_PIX_FMT_YUVJ420P;
  ctx->width = ctx->height = size;
  ctx->pix_fmt = pix;
  ctx->time_base = {1, 25};
  ctx->thread_count = 1;
  ctx->flags |= AV_CODEC_FLAG_BITEXACT;
  if (!png) {
    ctx->flags |= AV_CODEC_FLAG_QSCALE;
    ctx->global_quality = FF_QP2LAMBDA * 3;
  }
  MSOMNI_CHECK_FFMPEG(avcodec_open2(ctx.get(), codec, nullptr));
  SwsContext* raw_sws = nullptr;
  std::unique_ptr<AVFrame, frame_free> frame;
  if (png) {
    frame.reset(need(av_frame_alloc(), "av_frame_alloc"));
    frame->format = pix;
    frame->width = frame->height = size;
    MSOMNI_CHECK_FFMPEG(av_frame_get_buffer(frame.get(), 0));
    for (int y = 0; y < size; ++y) std::memcpy(frame->data[0] + y * frame->linesize[0], rgb.data() + size_t(y) * size * 3, size_t(size) * 3);
  } else {
    frame = to_frame(rgb, size, pix, raw_sws);
    frame->quality = ctx->global_quality;
  }
  std::unique_ptr<SwsContext, sws_free> sws{raw_sws};
  frame->pts = 0;
  MSOMNI_CHECK_FFMPEG(avcodec_send_frame(ctx.get(), frame.get()));
  MSOMNI_CHECK_FFMPEG(avcodec_send_frame(ctx.get(), nullptr));
  std::unique_ptr<AVPacket, packet_free> pkt{need(av_packet_alloc(), "av_packet_alloc")};
  MSOMNI_CHECK_FFMPEG(avcodec_receive_packet(ctx.get(), pkt.get()));
  return std::vector<uint8_t>(pkt->data, pkt->data + pkt->size);
}

std::vector<uint8_t> encode_mp4(const std::vector<std::vector<uint8_t>>& frames, const video_params& p) {
  if (frames.empty() || p.size % 2 != 0) throw std::invalid_argument("encode_mp4: need frames and an even size");
  const AVCodec* codec = need(avcodec_find_encoder_by_name("libx264"), "avcodec_find_encoder_by_name(libx264)");
  std::unique_ptr<AVCodecContext, codec_free> ctx{need(avcodec_alloc_context3(codec), "avcodec_alloc_context3")};
  ctx->width = ctx->height = p.size;
  ctx->pix_fmt = AV_PIX_FMT_YUV420P;
  ctx->time_base = {1, p.fps};
  ctx->framerate = {p.fps, 1};
  ctx->gop_size = p.gop;
  ctx->keyint_min = p.gop;
  ctx->max_b_frames = 0;
  ctx->thread_count = 1;  // one thread: x264 output is then the same on every run
  ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER | AV_CODEC_FLAG_BITEXACT;
  MSOMNI_CHECK_FFMPEG(av_opt_set(ctx->priv_data, "preset", "ultrafast", 0));
  MSOMNI_CHECK_FFMPEG(av_opt_set(ctx->priv_data, "x264-params", "scenecut=0", 0));
  MSOMNI_CHECK_FFMPEG(avcodec_open2(ctx.get(), codec, nullptr));

  memory_writer out;
  AVFormatContext* oc = nullptr;
  MSOMNI_CHECK_FFMPEG(avformat_alloc_output_context2(&oc, nullptr, "mp4", nullptr));
  struct oc_guard {
    AVFormatContext* oc;
    AVIOContext* io = nullptr;
    ~oc_guard() {
      if (io) av_freep(&io->buffer);
      avio_context_free(&io);
      avformat_free_context(oc);
    }
  } guard{oc};
  constexpr int io_size = 64 * 1024;
  auto* buf = static_cast<uint8_t*>(need(av_malloc(io_size), "av_malloc"));
  guard.io = avio_alloc_context(buf, io_size, 1, &out, nullptr, write_memory, seek_memory);
  if (!guard.io) {
    av_free(buf);
    need<AVIOContext>(nullptr, "avio_alloc_context");
  }
  oc->pb = guard.io;
  oc->flags |= AVFMT_FLAG_CUSTOM_IO | AVFMT_FLAG_BITEXACT;
  AVStream* st = need(avformat_new_stream(oc, nullptr), "avformat_new_stream");
  MSOMNI_CHECK_FFMPEG(avcodec_parameters_from_context(st->codecpar, ctx.get()));
  st->time_base = ctx->time_base;
  MSOMNI_CHECK_FFMPEG(avformat_write_header(oc, nullptr));

  std::unique_ptr<AVPacket, packet_free> pkt{need(av_packet_alloc(), "av_packet_alloc")};
  auto drain = [&]() {
    while (true) {
      const int rc = avcodec_receive_packet(ctx.get(), pkt.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
      MSOMNI_CHECK_FFMPEG(rc);
      // One frame per tick: without a duration the MP4 edit list ends at the last frame's
      // start and demuxers mark that frame discarded.
      if (pkt->duration == 0) pkt->duration = 1;
      av_packet_rescale_ts(pkt.get(), ctx->time_base, st->time_base);
      pkt->stream_index = st->index;
      MSOMNI_CHECK_FFMPEG(av_interleaved_write_frame(oc, pkt.get()));
    }
  };
  SwsContext* raw_sws = nullptr;
  for (size_t i = 0; i < frames.size(); ++i) {
    auto f = to_frame(frames[i], p.size, AV_PIX_FMT_YUV420P, raw_sws);
    f->pts = int64_t(i);
    MSOMNI_CHECK_FFMPEG(avcodec_send_frame(ctx.get(), f.get()));
    drain();
  }
  std::unique_ptr<SwsContext, sws_free> sws{raw_sws};
  MSOMNI_CHECK_FFMPEG(avcodec_send_frame(ctx.get(), nullptr));
  drain();
  MSOMNI_CHECK_FFMPEG(av_write_trailer(oc));
  avio_flush(guard.io);
  return std::move(out.data);
}

}  // namespace msomni::gen
