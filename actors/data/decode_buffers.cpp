// The decoder's plain helpers (see media_decoder.hpp): evenly spaced frame indices, byte-level
// tokens, and the pixel buffer pool shared by a pipeline's decoders.
#include "media_decoder.hpp"

#include <algorithm>

namespace msomni::data {

std::vector<int64_t> sample_frame_indices(int64_t total, int count) {
  std::vector<int64_t> out;
  for (int i = 0; i < count; ++i) out.push_back(std::min<int64_t>(total - 1, int64_t((i + 0.5) * double(total) / count)));
  return out;
}

std::vector<int32_t> tokenize_bytes(std::string_view text, size_t max_tokens) {
  const size_t n = std::min(text.size(), max_tokens >= 2 ? max_tokens - 2 : 0);
  std::vector<int32_t> out;
  out.reserve(n + 2);
  out.push_back(token_bos);
  for (size_t i = 0; i < n; ++i) out.push_back(int32_t(static_cast<unsigned char>(text[i])));
  out.push_back(token_eos);
  return out;
}

std::vector<uint8_t> pixel_pool::take() {
  std::lock_guard lock(mu_);
  if (free_.empty()) return {};
  std::vector<uint8_t> out = std::move(free_.back());
  free_.pop_back();
  return out;
}

void pixel_pool::give(std::vector<uint8_t>&& buffer) {
  if (buffer.capacity() == 0) return;
  std::lock_guard lock(mu_);
  if (free_.size() < max_free_) free_.push_back(std::move(buffer));
}

size_t pixel_pool::free_buffers() {
  std::lock_guard lock(mu_);
  return free_.size();
}

}  // namespace msomni::data
