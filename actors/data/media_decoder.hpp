// The decode stage's work on one sample: the images and videos of media_format.hpp from memory
// through libavcodec/libavformat, libswscale resize to the model's square image size, video
// frame sampling (`video_frames` evenly spaced frames, or keyframe-only when downgraded), and
// byte-level text tokenization. Media whose header states more pixels than the options allow is
// refused before decoding (too_many_pixels). Media is decoded as what its bytes are: a PNG
// named .jpeg decodes, marked `mismatched_as`. Damaged media is reported as a bad
// decoded_sample with its cause in words, never thrown; only allocation failures and misuse
// throw. One decoder per worker thread.
#pragma once

#include "sample.hpp"

#include "config/job_config.hpp"

#include <memory>
#include <mutex>
#include <string_view>

namespace msomni::data {

// Byte-level vocabulary: 0..255 are bytes, then the specials (model vocab_size >= 260).
inline constexpr int32_t token_bos = 256;
inline constexpr int32_t token_eos = 257;
inline constexpr int32_t token_pad = 258;
inline constexpr int32_t token_vocab_min = 260;

// BOS, the UTF-8 bytes, EOS; the bytes are cut so the result fits max_tokens (>= 2).
std::vector<int32_t> tokenize_bytes(std::string_view text, size_t max_tokens);

// max_*_pixels: the largest media decoded, in pixels per image or per video frame
// (io.max_image_pixels, io.max_video_pixels): a larger one is bad as too_many_pixels, judged by
// its header before any decoding, so one huge file costs neither its decoded size in memory nor
// its decode time.
struct decode_options {
  int image_size = 32;
  int video_frames = 2;
  size_t max_tokens = 224;
  uint64_t max_image_pixels = uint64_t(config::default_max_image_pixels);
  uint64_t max_video_pixels = uint64_t(config::default_max_video_pixels);
};

// Pixel buffers shared by the decoders of one pipeline (thread-safe): a decoder given a pool
// takes each output buffer from it, and the stage done with a decoded sample's pixels gives
// them back, so steady-state decoding allocates nothing. A fresh buffer costs malloc, zeroing
// and, for a 150 KB video, page faults when the heap was trimmed after the previous batch.
// A recycled buffer is not zeroed: the decoder writes every byte of the pixels it returns.
class pixel_pool {
 public:
  explicit pixel_pool(size_t max_free = 128) : max_free_(max_free) {}
  std::vector<uint8_t> take();               // a free buffer (any size) or an empty one
  void give(std::vector<uint8_t>&& buffer);  // kept while fewer than max_free are free
  size_t free_buffers();

 private:
  std::mutex mu_;
  std::vector<std::vector<uint8_t>> free_;
  size_t max_free_;
};

class media_decoder {
 public:
  explicit media_decoder(decode_options opts, std::shared_ptr<pixel_pool> pool = nullptr);
  ~media_decoder();
  media_decoder(const media_decoder&) = delete;
  media_decoder& operator=(const media_decoder&) = delete;

  // Decodes `in` into a decoded_sample (bad with a reason when the media is damaged).
  // keyframe_only applies to video: only keyframes are decoded (AVDISCARD_NONKEY) and each
  // sampled slot takes the nearest keyframe at or before it.
  decoded_sample decode(const raw_sample& in, bool keyframe_only);

  const decode_options& options() const noexcept { return opts_; }

 private:
  struct impl;
  decode_options opts_;
  std::shared_ptr<pixel_pool> pool_;
  std::unique_ptr<impl> impl_;
};

// Evenly spaced frame indices: slot i takes frame floor((i + 0.5) * total / count).
std::vector<int64_t> sample_frame_indices(int64_t total, int count);

}  // namespace msomni::data
