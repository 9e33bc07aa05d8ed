// The byte-level text vocabulary shared by the data pipeline and the models: ids 0-255 are
// the bytes themselves, 256-259 are specials. Captions become BOS bytes... EOS, padded.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace msomni::model {

inline constexpr int32_t token_bos = 256;
inline constexpr int32_t token_eos = 257;
inline constexpr int32_t token_pad = 258;
// Reserved for separating frames/rows of patches; the reference model does not emit it.
inline constexpr int32_t token_image_sep = 259;
inline constexpr int32_t byte_vocab_size = 260;

// BOS, the bytes of `text`, EOS, then PAD up to `length` (truncating the text, never the
// EOS, when it does not fit). `length` must be at least 2.
inline std::vector<int32_t> encode_text(std::string_view text, int64_t length) {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(length));
  out.push_back(token_bos);
  for (unsigned char c : text) {
    if (static_cast<int64_t>(out.size()) + 1 >= length) break;
    out.push_back(c);
  }
  out.push_back(token_eos);
  while (static_cast<int64_t>(out.size()) < length) out.push_back(token_pad);
  return out;
}

// The loss mask that goes with encode_text: every token after BOS up to and including EOS
// is a prediction target; BOS (nothing precedes it in the text) and PAD are not. Appends
// the mask of tokens [first, first + n) to `out`.
inline void append_text_loss_mask(const int32_t* first, size_t n, std::vector<uint8_t>& out) {
  const size_t at = out.size();
  out.resize(at + n, 0);
  for (size_t t = 1; t < n; ++t) {
    if (first[t] == token_pad) break;
    out[at + t] = 1;
  }
}

inline std::vector<uint8_t> text_loss_mask(const std::vector<int32_t>& tokens) {
  std::vector<uint8_t> mask;
  append_text_loss_mask(tokens.data(), tokens.size(), mask);
  return mask;
}

}  // namespace msomni::model
