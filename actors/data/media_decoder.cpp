// FFmpeg decode of in-memory images and videos (media_format.hpp's formats), swscale resize, frame sampling, tokenizing.
#include "media_decoder.hpp"

#include "media_format.hpp"

#include "core/check.hpp"
#include "core/log.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <cstring>
#include <map>
#include <new>
#include <tuple>

namespace msomni::data {
namespace {

// Custom AVIO over a byte span: the demuxer reads the video straight from the tar member.
struct memory_reader {
  const uint8_t* data;
  int64_t size;
  int64_t pos = 0;
};

int read_memory(void* opaque, uint8_t* buf, int n) {
  auto* r = static_cast<memory_reader*>(opaque);
  const int64_t k = std::min<int64_t>(n, r->size - r->pos);
  if (k <= 0) return AVERROR_EOF;
  std::memcpy(buf, r->data + r->pos, size_t(k));
  r->pos += k;
  return int(k);
}

int64_t seek_memory(void* opaque, int64_t offset, int whence) {
  auto* r = static_cast<memory_reader*>(opaque);
  if (whence & AVSEEK_SIZE) return r->size;
  int64_t base = (whence & 3) == SEEK_CUR ? r->pos : (whence & 3) == SEEK_END ? r->size : 0;
  const int64_t to = base + offset;
  if (to < 0 || to > r->size) return AVERROR(EINVAL);
  r->pos = to;
  return to;
}

// The JPEG decoders in FFmpeg tolerate a missing EOI and show a half image; a cut file is
// damaged data for us, so check both markers before decoding.
bool jpeg_markers_ok(const std::vector<uint8_t>& b) {
  return b.size() >= 4 && b[0] == 0xFF && b[1] == 0xD8 && b[b.size() - 2] == 0xFF && b[b.size() - 1] == 0xD9;
}

AVPixelFormat unjpeg(AVPixelFormat f, bool& full_range) {
  full_range = true;
  switch (f) {
    case AV_PIX_FMT_YUVJ420P: return AV_PIX_FMT_YUV420P;
    case AV_PIX_FMT_YUVJ422P: return AV_PIX_FMT_YUV422P;
    case AV_PIX_FMT_YUVJ444P: return AV_PIX_FMT_YUV444P;
    case AV_PIX_FMT_YUVJ440P: return AV_PIX_FMT_YUV440P;
    default: full_range = false; return f;
  }
}

struct frame_deleter { void operator()(AVFrame* f) const { av_frame_free(&f); } };
struct packet_deleter { void operator()(AVPacket* p) const { av_packet_free(&p); } };
struct codec_deleter { void operator()(AVCodecContext* c) const { avcodec_free_context(&c); } };
using frame_ptr = std::unique_ptr<AVFrame, frame_deleter>;
using packet_ptr = std::unique_ptr<AVPacket, packet_deleter>;
using codec_ptr = std::unique_ptr<AVCodecContext, codec_deleter>;

template <class T>
T* not_null(T* p, const char* what) {
  if (!p) ::msomni::fail_call("FFmpeg", what, AVERROR(ENOMEM), "allocation failed", __FILE__, __LINE__);
  return p;
}

// FFmpeg's own frame-size bound for a limit of `pixels`: it counts a frame's width rounded up to
// its stride alignment (up to 64), so an image exactly at the limit needs slack; twice the limit
// keeps every stated size up to the limit decodable and still bounds what a lying header costs.
int64_t decoder_pixel_bound(uint64_t pixels) { return int64_t(std::min<uint64_t>(pixels, uint64_t(INT64_MAX) / 4) * 2); }

// Closes the demuxer and frees the custom IO context (FFmpeg does not own a custom pb).
struct demux_guard {
  AVFormatContext* fmt = nullptr;
  AVIOContext* io = nullptr;
  ~demux_guard() {
    avformat_close_input(&fmt);
    if (io) av_freep(&io->buffer);
    avio_context_free(&io);
  }
};

std::string av_error_text(int rc) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(rc, text, sizeof text);
  return text;
}

AVCodecID image_codec_id(std::string_view format) {
  if (format == "jpg") return AV_CODEC_ID_MJPEG;
  if (format == "png") return AV_CODEC_ID_PNG;
  if (format == "webp") return AV_CODEC_ID_WEBP;
  if (format == "gif") return AV_CODEC_ID_GIF;
  if (format == "bmp") return AV_CODEC_ID_BMP;
  return AV_CODEC_ID_NONE;
}

// The FFmpeg demuxer of a video format family (media_format.hpp), or nullptr.
const char* video_demuxer(std::string_view format) {
  if (format == "mp4") return "mov";
  if (format == "mkv") return "matroska";
  if (format == "avi") return "avi";
  return nullptr;
}

// Why media of neither a known name nor known bytes is refused.
std::string no_format_cause(modality kind, const raw_sample& in) {
  const std::string_view sniffed = sniff_media_format(in.media);
  std::string out = "its bytes are ";
  out += sniffed.empty() ? std::string("no ") + to_string(kind) + " format msomni decodes"
                         : "a " + std::string(format_label(sniffed)) + " " + to_string(kind_of_format(sniffed)) + ", not an " +
                               to_string(kind);
  out += " (accepted: " + std::string(accepted_extensions(kind)) + ")";
  return out;
}

}  // namespace

struct media_decoder::impl {
  // One scaler per (format, size, range): switching the range of a cached context with
  // sws_setColorspaceDetails does not always rebuild its tables, so output would depend on
  // what was decoded before, and batches would differ after a restore.
  std::map<std::tuple<int, int, int, bool>, SwsContext*> scalers;
  std::map<AVCodecID, codec_ptr> image_codecs;  // reused across samples, flushed between
  frame_ptr frame{not_null(av_frame_alloc(), "av_frame_alloc")};
  packet_ptr packet{not_null(av_packet_alloc(), "av_packet_alloc")};
  std::vector<uint8_t> padded;

  ~impl() {
    for (auto& [key, s] : scalers) sws_freeContext(s);
  }

  // Converts `f` to RGB24 at size x size into dst (size*size*3 bytes).
  void resize_into(const AVFrame* f, int size, uint8_t* dst) {
    bool full_range = false;
    const AVPixelFormat src_fmt = unjpeg(AVPixelFormat(f->format), full_range);
    SwsContext*& sws = scalers[{int(src_fmt), f->width, f->height, full_range}];
    if (!sws) {
      sws = sws_getContext(f->width, f->height, src_fmt, size, size, AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
      if (!sws) ::msomni::fail_call("FFmpeg", "sws_getContext", AVERROR(EINVAL), "no scaler for this format", __FILE__, __LINE__);
      const int* coeffs = sws_getCoefficients(SWS_CS_DEFAULT);
      sws_setColorspaceDetails(sws, coeffs, full_range ? 1 : 0, coeffs, 1, 0, 1 << 16, 1 << 16);
    }
    uint8_t* planes[4] = {dst, nullptr, nullptr, nullptr};
    int strides[4] = {size * 3, 0, 0, 0};
    MSOMNI_CHECK_FFMPEG(sws_scale(sws, f->data, f->linesize, 0, f->height, planes, strides));
  }

  // MJPEG contexts are reused (flushed) across samples. The others are not: after a flush
  // the PNG decoder's output still depended on the previous image (seen in FFmpeg 5.1).
  // `max_pixels`: FFmpeg refuses a frame buffer larger than decoder_pixel_bound of it, a second
  // bound behind the header check for a file whose header the check could not read.
  AVCodecContext* image_codec(AVCodecID id, uint64_t max_pixels) {
    auto& slot = image_codecs[id];
    if (id != AV_CODEC_ID_MJPEG) slot.reset();
    if (!slot) {
      const AVCodec* codec = not_null(avcodec_find_decoder(id), "avcodec_find_decoder");
      slot.reset(not_null(avcodec_alloc_context3(codec), "avcodec_alloc_context3"));
      slot->thread_count = 1;  // parallelism comes from decode workers, not codec threads
      slot->max_pixels = decoder_pixel_bound(max_pixels);
      slot->err_recognition = AV_EF_EXPLODE | AV_EF_CRCCHECK;
      MSOMNI_CHECK_FFMPEG(avcodec_open2(slot.get(), codec, nullptr));
    } else {
      avcodec_flush_buffers(slot.get());
    }
    return slot.get();
  }

  // `format` is what the bytes are (media_format.hpp), which may differ from the name.
  // Returns the cause when the image is refused, empty when it decoded.
  std::string decode_image(const raw_sample& in, std::string_view format, const decode_options& o, decoded_sample& out) {
    const int size = o.image_size;
    const AVCodecID id = image_codec_id(format);
    if (id == AV_CODEC_ID_NONE) return no_format_cause(modality::image, in);
    if (format == "jpg" && !jpeg_markers_ok(in.media)) return "a cut JPEG: no end-of-image marker";
    if (!avcodec_find_decoder(id)) return "this FFmpeg has no " + std::string(format_label(format)) + " decoder";
    AVCodecContext* ctx = image_codec(id, o.max_image_pixels);
    padded.assign(in.media.begin(), in.media.end());
    padded.resize(in.media.size() + AV_INPUT_BUFFER_PADDING_SIZE, 0);
    packet->data = padded.data();
    packet->size = int(in.media.size());
    int rc = avcodec_send_packet(ctx, packet.get());
    packet->data = nullptr;
    packet->size = 0;
    const std::string decoder = "the " + std::string(format_label(format)) + " decoder";
    if (rc < 0) return decoder + " refused it (" + av_error_text(rc) + ")";
    avcodec_send_packet(ctx, nullptr);  // drain: single-packet images
    rc = avcodec_receive_frame(ctx, frame.get());
    if (rc < 0) return decoder + " gave no picture (" + av_error_text(rc) + ")";
    if (frame->decode_error_flags != 0 || (frame->flags & AV_FRAME_FLAG_CORRUPT)) {
      av_frame_unref(frame.get());
      return decoder + " found damaged data";
    }
    out.pixels.resize(size_t(size) * size * 3);
    resize_into(frame.get(), size, out.pixels.data());
    av_frame_unref(frame.get());
    out.frames = out.unique_frames = 1;
    return {};
  }

  // The cause on failure (the sample is then bad), empty on success.
  std::string decode_video(const raw_sample& in, std::string_view format, const decode_options& o, bool keyframe_only,
                           decoded_sample& out);
};

std::string media_decoder::impl::decode_video(const raw_sample& in, std::string_view format, const decode_options& o,
                                              bool keyframe_only, decoded_sample& out) {
  const char* demuxer = video_demuxer(format);
  if (!demuxer) return no_format_cause(modality::video, in);
  const std::string container(format_label(format));
  memory_reader reader{in.media.data(), int64_t(in.media.size())};
  demux_guard d;
  constexpr int io_size = 32 * 1024;
  auto* io_buf = static_cast<uint8_t*>(not_null(av_malloc(io_size), "av_malloc"));
  d.io = avio_alloc_context(io_buf, io_size, 0, &reader, read_memory, nullptr, seek_memory);
  if (!d.io) {
    av_free(io_buf);
    ::msomni::fail_call("FFmpeg", "avio_alloc_context", AVERROR(ENOMEM), "allocation failed", __FILE__, __LINE__);
  }
  d.fmt = not_null(avformat_alloc_context(), "avformat_alloc_context");
  d.fmt->pb = d.io;
  d.fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
  // On failure avformat_open_input frees the context; the guard then sees nullptr.
  if (const int rc = avformat_open_input(&d.fmt, nullptr, av_find_input_format(demuxer), nullptr); rc < 0)
    return "the " + container + " demuxer cannot read it (" + av_error_text(rc) + ")";
  // Every family states its streams, codecs and frame sizes in its header; no probing decode.
  if (d.fmt->nb_streams == 0) return "the " + container + " file holds no stream";
  const int si = av_find_best_stream(d.fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (si < 0) return "the " + container + " file holds no video stream";
  AVStream* st = d.fmt->streams[si];
  const uint64_t stated = uint64_t(std::max(st->codecpar->width, 0)) * uint64_t(std::max(st->codecpar->height, 0));
  if (stated > o.max_video_pixels) {
    out.reason = bad_reason::too_many_pixels;
    return std::to_string(st->codecpar->width) + "x" + std::to_string(st->codecpar->height) +
           " per frame is more than io.max_video_pixels " + std::to_string(o.max_video_pixels);
  }
  const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
  const std::string codec_name = avcodec_get_name(st->codecpar->codec_id);
  if (!codec) return "this FFmpeg has no decoder for its " + codec_name + " video";
  codec_ptr ctx{not_null(avcodec_alloc_context3(codec), "avcodec_alloc_context3")};
  if (avcodec_parameters_to_context(ctx.get(), st->codecpar) < 0) return "the " + codec_name + " stream's parameters are unusable";
  ctx->thread_count = 1;
  ctx->max_pixels = decoder_pixel_bound(o.max_video_pixels);
  ctx->err_recognition = AV_EF_EXPLODE;
  if (keyframe_only) ctx->skip_frame = AVDISCARD_NONKEY;
  if (const int rc = avcodec_open2(ctx.get(), codec, nullptr); rc < 0)
    return "the " + codec_name + " decoder cannot open the stream (" + av_error_text(rc) + ")";

  // The stream's packets first: a container without a frame count in its header (Matroska,
  // WebM, fragmented MP4) states it by its packets. They reference the sample's bytes'
  // copies, so they cost about the sample's size, which io.max_sample_bytes bounds.
  std::vector<packet_ptr> packets;
  int64_t discarded = 0;
  while (true) {
    packet_ptr p{not_null(av_packet_alloc(), "av_packet_alloc")};
    const int rc = av_read_frame(d.fmt, p.get());
    if (rc == AVERROR_EOF) break;
    if (rc < 0)
      return "the " + container + " demuxer failed after " + std::to_string(packets.size()) + " video packets (" +
             av_error_text(rc) + "): a damaged or cut file";
    if (p->stream_index != si) continue;
    if (p->flags & AV_PKT_FLAG_DISCARD) ++discarded;  // cut by an edit list: never shown
    packets.push_back(std::move(p));
  }
  const int64_t promised = st->nb_frames;
  if (promised > 0 && int64_t(packets.size()) < promised)
    return "a cut file: " + std::to_string(packets.size()) + " video packets of the " + std::to_string(promised) +
           " its header promises";
  const int64_t total = promised > 0 ? promised : int64_t(packets.size()) - discarded;
  if (total <= 0) return "the " + container + " file holds no video frame";
  const auto wanted = sample_frame_indices(total, o.video_frames);
  const size_t frame_bytes = size_t(o.image_size) * o.image_size * 3;
  // Every byte is written below (each slot is decoded, copied from a keyframe or from the slot
  // before, or the sample is bad), so a recycled buffer needs no zeroing.
  out.pixels.resize(frame_bytes * wanted.size());
  const AVRational rate = st->avg_frame_rate.num > 0 ? st->avg_frame_rate : AVRational{25, 1};
  int64_t decoded = 0;
  std::vector<bool> filled(wanted.size(), false);
  bool damaged = false;
  std::vector<std::pair<int64_t, std::vector<uint8_t>>> keyframes;  // (frame index, RGB)

  // Full decode: frames arrive in display order, so a counter is the frame index. Keyframe
  // mode: the index comes from the timestamp; each keyframe is kept and slots pick later.
  auto take = [&](AVFrame* f) {
    if (f->decode_error_flags != 0 || (f->flags & AV_FRAME_FLAG_CORRUPT)) damaged = true;
    if (keyframe_only) {
      const int64_t ts = f->best_effort_timestamp == AV_NOPTS_VALUE ? 0 : f->best_effort_timestamp;
      const int64_t start = st->start_time == AV_NOPTS_VALUE ? 0 : st->start_time;
      keyframes.emplace_back(av_rescale_q(ts - start, st->time_base, av_inv_q(rate)), std::vector<uint8_t>(frame_bytes));
      resize_into(f, o.image_size, keyframes.back().second.data());
    } else {
      for (size_t i = 0; i < wanted.size(); ++i)
        if (wanted[i] == decoded) {
          resize_into(f, o.image_size, out.pixels.data() + i * frame_bytes);
          filled[i] = true;
        }
    }
    ++decoded;
  };
  auto drain = [&]() -> int {
    while (true) {
      const int rc = avcodec_receive_frame(ctx.get(), frame.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return 0;
      if (rc < 0) return rc;
      take(frame.get());
      av_frame_unref(frame.get());
    }
  };
  const std::string decoder = "the " + codec_name + " decoder";
  for (size_t k = 0; k < packets.size() && !damaged; ++k) {
    if (keyframe_only && !(packets[k]->flags & AV_PKT_FLAG_KEY)) continue;
    int rc = avcodec_send_packet(ctx.get(), packets[k].get());
    if (rc >= 0) rc = drain();
    if (rc < 0) return decoder + " refused video packet " + std::to_string(k) + " (" + av_error_text(rc) + ")";
  }
  if (!damaged) {
    int rc = avcodec_send_packet(ctx.get(), nullptr);
    if (rc >= 0) rc = drain();
    if (rc < 0) return decoder + " failed while draining (" + av_error_text(rc) + ")";
  }
  if (damaged) return decoder + " marked a frame damaged";
  if (keyframe_only) {
    if (keyframes.empty()) return "no keyframe decoded";
    std::sort(keyframes.begin(), keyframes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<size_t> used;
    for (size_t i = 0; i < wanted.size(); ++i) {
      size_t pick = 0;  // the nearest keyframe at or before the slot (the first one otherwise)
      for (size_t k = 0; k < keyframes.size(); ++k)
        if (keyframes[k].first <= wanted[i]) pick = k;
      std::memcpy(out.pixels.data() + i * frame_bytes, keyframes[pick].second.data(), frame_bytes);
      if (std::find(used.begin(), used.end(), pick) == used.end()) used.push_back(pick);
    }
    out.unique_frames = uint32_t(used.size());
  } else {
    const int64_t shown = int64_t(packets.size()) - discarded;
    if (decoded < shown)
      return decoder + " gave " + std::to_string(decoded) + " frames for " + std::to_string(shown) + " packets";
    // A slot past the last shown frame (edit lists can hide the tail) repeats the one before.
    for (size_t i = 1; i < wanted.size(); ++i)
      if (!filled[i] && filled[i - 1]) {
        std::memcpy(out.pixels.data() + i * frame_bytes, out.pixels.data() + (i - 1) * frame_bytes, frame_bytes);
        filled[i] = true;
      }
    if (!filled[0]) return "no frame decoded";
    out.unique_frames = uint32_t(wanted.size());
  }
  out.frames = uint32_t(wanted.size());
  return {};
}

media_decoder::media_decoder(decode_options opts, std::shared_ptr<pixel_pool> pool)
    : opts_(opts), pool_(std::move(pool)), impl_(std::make_unique<impl>()) {
  // Damaged samples are expected and reported by the pipeline with their keys; FFmpeg's own
  // per-packet complaints would flood stderr. A level someone lowered on purpose is kept.
  if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_FATAL);
}
media_decoder::~media_decoder() = default;

decoded_sample media_decoder::decode(const raw_sample& in, bool keyframe_only) {
  decoded_sample out;
  out.key = in.key;
  out.kind = in.kind;
  out.pos = in.pos;
  out.shard_problems = in.shard_problems;
  if (in.bad) {
    out.bad = true;
    out.reason = in.reason;
    out.cause = in.cause;
    return out;
  }
  out.tokens = tokenize_bytes(in.caption, opts_.max_tokens);
  if (pool_ && in.kind != modality::text) out.pixels = pool_->take();  // resized, not zeroed, below
  bool ok = true;
  if (in.kind != modality::text) {
    const media_choice format = choose_media_format(in.kind, in.media_ext, in.media);
    std::string cause;
    if (in.kind == modality::image) {
      out.reason = bad_reason::corrupt_image;
      const auto stated = image_pixel_size(format.format, in.media);
      if (stated && stated->pixels() > opts_.max_image_pixels) {
        out.reason = bad_reason::too_many_pixels;
        cause = std::to_string(stated->width) + "x" + std::to_string(stated->height) + " is more than io.max_image_pixels " +
                std::to_string(opts_.max_image_pixels);
      } else {
        cause = impl_->decode_image(in, format.format, opts_, out);
      }
    } else {
      out.downgraded = keyframe_only;
      out.reason = bad_reason::corrupt_video;  // unless decode_video names another reason
      cause = impl_->decode_video(in, format.format, opts_, keyframe_only, out);
    }
    if (!cause.empty()) {
      ok = false;
      MSOMNI_LOG(debug, "data.decode") << in.key << ": " << cause;
      out.cause = std::move(cause);
    } else if (format.mismatched_name) {
      out.mismatched_as = std::string(format.format);
    }
  }
  if (!ok) {
    out.bad = true;
    out.pixels.clear();
    out.tokens.clear();
    out.frames = out.unique_frames = 0;
  }
  return out;
}

}  // namespace msomni::data
