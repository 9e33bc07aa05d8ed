// Patchify, normalise and pad samples into a micro_batch (see tensorizer.hpp).
#include "tensorizer.hpp"

#include "media_decoder.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace msomni::data {

void batch_shape::validate() const {
  if (batch <= 0 || image_size <= 0 || patch_size <= 0 || image_size % patch_size != 0 || video_frames <= 0)
    throw std::invalid_argument("batch shape: image_size " + std::to_string(image_size) + " must be a positive multiple of patch_size " +
                                std::to_string(patch_size) + ", batch and video_frames positive");
  if (max_tokens() < 2)
    throw std::invalid_argument("batch shape: max_seq_len " + std::to_string(max_seq_len) + " leaves " + std::to_string(max_tokens()) +
                                " text tokens after " + std::to_string(max_patches()) + " patches; need at least 2");
}

namespace {

constexpr float pixel_scale = 2.0f / 255.0f;

// The packing loop is the tensor stage's main cost. On x86-64 it converts bytes to floats in
// vector registers (AVX2 when the CPU has it, else SSE2, which every x86-64 has); elsewhere a
// scalar loop. All variants compute the same multiply then subtract per byte (no FMA), so
// every build packs bit-identical floats. The CPU check picks a whole-frame function once per
// frame: a call through a pointer per 48-byte patch row (784 per 112 px image) had cost more
// than the conversion itself (15 us against 6 us per image, hot caches).
inline void scale_tail(const uint8_t* src, float* dst, int64_t k, int64_t n) {
  for (; k < n; ++k) dst[k] = float(src[k]) * pixel_scale - 1.0f;
}

// One frame (S x S x RGB bytes) -> patches_per_frame rows of patch_dim floats in [-1, 1]:
// each patch row is p runs of p*3 contiguous bytes of the image. PATCHIFY_RUNS walks the runs
// with `src`, `dst`, `n` (run length) in scope; each variant converts a run in its body (a
// lambda would not inherit the target attribute, and a call per run is what was slow).
#define MSOMNI_PATCHIFY_RUNS(...)                                                            \
  const int64_t S = s.image_size, p = s.patch_size, grid = S / p, n = p * 3;                 \
  for (int64_t py = 0; py < grid; ++py)                                                      \
    for (int64_t px = 0; px < grid; ++px) {                                                  \
      float* dst = out + (py * grid + px) * s.patch_dim();                                   \
      for (int64_t dy = 0; dy < p; ++dy, dst += n) {                                         \
        const uint8_t* src = rgb + ((py * p + dy) * S + px * p) * 3;                         \
        __VA_ARGS__                                                                          \
      }                                                                                      \
    }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The floats go out with streaming stores when the batch is 16-byte aligned (always, from
// malloc): a batch is megabytes, written once here and read next by the consumer, so fetching
// each cache line before overwriting it and evicting the decoders' data for it only cost time
// (a slot's pack went from ~13.6 to ~10.7 us at 1 worker, 112 px; pixels decoded just before).
// The fence at the end orders them before the batch is handed to another thread.
__attribute__((target("avx2"))) void patchify_avx2(const batch_shape& s, const uint8_t* rgb, float* out) {
  const __m256 scale = _mm256_set1_ps(pixel_scale), one = _mm256_set1_ps(1.0f);
  if ((reinterpret_cast<uintptr_t>(out) & 15) != 0 || (s.patch_size * 3) % 4 != 0) {
    MSOMNI_PATCHIFY_RUNS({
      int64_t k = 0;
      for (; k + 8 <= n; k += 8) {
        const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + k))));
        _mm256_storeu_ps(dst + k, _mm256_sub_ps(_mm256_mul_ps(f, scale), one));
      }
      scale_tail(src, dst, k, n);
    })
    return;
  }
  MSOMNI_PATCHIFY_RUNS({
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + k))));
      const __m256 v = _mm256_sub_ps(_mm256_mul_ps(f, scale), one);
      _mm_stream_ps(dst + k, _mm256_castps256_ps128(v));
      _mm_stream_ps(dst + k + 4, _mm256_extractf128_ps(v, 1));
    }
    if (k + 4 <= n) {  // run lengths are multiples of 4 (p*3 with p a multiple of 4) here
      int four;
      std::memcpy(&four, src + k, sizeof four);
      const __m128 f = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(four)));
      _mm_stream_ps(dst + k, _mm_sub_ps(_mm_mul_ps(f, _mm256_castps256_ps128(scale)), _mm256_castps256_ps128(one)));
      k += 4;
    }
  })
  _mm_sfence();
}

void patchify_sse2(const batch_shape& s, const uint8_t* rgb, float* out) {
  const __m128 scale = _mm_set1_ps(pixel_scale), one = _mm_set1_ps(1.0f);
  const __m128i zero = _mm_setzero_si128();
  MSOMNI_PATCHIFY_RUNS({
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k));
      const __m128i lo = _mm_unpacklo_epi8(b, zero), hi = _mm_unpackhi_epi8(b, zero);
      const __m128i q[4] = {_mm_unpacklo_epi16(lo, zero), _mm_unpackhi_epi16(lo, zero), _mm_unpacklo_epi16(hi, zero),
                            _mm_unpackhi_epi16(hi, zero)};
      for (int j = 0; j < 4; ++j) _mm_storeu_ps(dst + k + 4 * j, _mm_sub_ps(_mm_mul_ps(_mm_cvtepi32_ps(q[j]), scale), one));
    }
    scale_tail(src, dst, k, n);
  })
}

using patchify_fn = void (*)(const batch_shape&, const uint8_t*, float*);
patchify_fn pick_patchify() { return __builtin_cpu_supports("avx2") ? patchify_avx2 : patchify_sse2; }
#else
void patchify_plain(const batch_shape& s, const uint8_t* rgb, float* out) { MSOMNI_PATCHIFY_RUNS(scale_tail(src, dst, 0, n);) }
using patchify_fn = void (*)(const batch_shape&, const uint8_t*, float*);
patchify_fn pick_patchify() { return patchify_plain; }
#endif

#undef MSOMNI_PATCHIFY_RUNS

void patchify(const batch_shape& s, const uint8_t* rgb, float* out) {
  static const patchify_fn chosen = pick_patchify();
  chosen(s, rgb, out);
}

}  // namespace

void pack_micro_batch_into(const batch_shape& s, const std::vector<decoded_sample>& samples, micro_batch& b) {
  if (int64_t(samples.size()) != s.batch)
    throw std::invalid_argument("pack_micro_batch: " + std::to_string(samples.size()) + " samples for batch " + std::to_string(s.batch));
  for (const auto& x : samples)
    if (x.bad) throw std::invalid_argument("pack_micro_batch: bad sample " + x.key);
  pack_begin(s, b);
  for (int64_t i = 0; i < s.batch; ++i) pack_slot(s, uint32_t(i), samples[size_t(i)], b);
}

void pack_begin(const batch_shape& s, micro_batch& b) {
  const int64_t B = s.batch, P = s.max_patches(), D = s.patch_dim(), T = s.max_tokens();
  // A recycled batch of this shape still holds zeros wherever its patch_mask is 0 (packing
  // wrote them), so pack_slot zeroes only the patch rows that were real and are padding now:
  // a text sample's slot costs no 150 KB memset when the slot was padding before too. Any
  // other batch starts as all padding (a fresh vector's resize zero-fills).
  const bool recycled = b.shape == s && b.patches.size() == size_t(B * P * D) && b.patch_mask.size() == size_t(B * P);
  if (!recycled) {
    b.patches.assign(size_t(B * P * D), 0.0f);
    b.patch_mask.assign(size_t(B * P), 0);
  }
  b.shape = s;
  // resize keeps a recycled buffer's capacity; pack_slot overwrites every element of its slot.
  b.tokens.resize(size_t(B * T));
  b.token_mask.resize(size_t(B * T));
  b.kinds.resize(size_t(B));
  b.downgraded.resize(size_t(B));
  b.replaced.resize(size_t(B));
  b.keys.resize(size_t(B));
}

void pack_slot(const batch_shape& s, uint32_t slot, const decoded_sample& x, micro_batch& b) {
  const int64_t P = s.max_patches(), D = s.patch_dim(), T = s.max_tokens();
  const int64_t ppf = s.patches_per_frame();
  const int64_t i = slot;
  const size_t frame_bytes = size_t(s.image_size * s.image_size * 3);
  if (i >= s.batch || b.patch_mask.size() != size_t(s.batch * P) || !(b.shape == s))
    throw std::invalid_argument("pack_slot: slot " + std::to_string(i) + " of a batch not begun for this shape");
  if (x.bad) throw std::invalid_argument("pack_micro_batch: bad sample " + x.key);
  b.kinds[size_t(i)] = x.kind;
  b.downgraded[size_t(i)] = x.downgraded ? 1 : 0;
  b.replaced[size_t(i)] = x.replaced ? 1 : 0;
  b.keys[size_t(i)] = x.key;
  const int64_t frames = std::min<int64_t>(x.frames, s.video_frames);
  if (x.pixels.size() < size_t(frames) * frame_bytes) throw std::invalid_argument("pack_micro_batch: short pixels in " + x.key);
  float* base = b.patches.data() + i * P * D;
  for (int64_t f = 0; f < frames; ++f) {
    const uint8_t* rgb = x.pixels.data() + size_t(f) * frame_bytes;
    // A keyframe repeated in consecutive slots is converted once and copied.
    if (f > 0 && std::memcmp(rgb, rgb - frame_bytes, frame_bytes) == 0)
      std::memcpy(base + f * ppf * D, base + (f - 1) * ppf * D, size_t(ppf * D) * sizeof(float));
    else
      patchify(s, rgb, base + f * ppf * D);
  }
  for (int64_t j = frames * ppf; j < P; ++j)
    if (b.patch_mask[size_t(i * P + j)] != 0) std::fill_n(base + j * D, D, 0.0f);
  std::fill_n(b.patch_mask.begin() + i * P, frames * ppf, uint8_t{1});
  std::fill(b.patch_mask.begin() + i * P + frames * ppf, b.patch_mask.begin() + (i + 1) * P, uint8_t{0});
  const int64_t n = std::min<int64_t>(int64_t(x.tokens.size()), T);
  std::copy_n(x.tokens.begin(), n, b.tokens.begin() + i * T);
  std::fill(b.tokens.begin() + i * T + n, b.tokens.begin() + (i + 1) * T, token_pad);
  std::fill_n(b.token_mask.begin() + i * T, n, uint8_t{1});
  std::fill(b.token_mask.begin() + i * T + n, b.token_mask.begin() + (i + 1) * T, uint8_t{0});
}

micro_batch pack_micro_batch(const batch_shape& s, const std::vector<decoded_sample>& samples) {
  micro_batch b;
  pack_micro_batch_into(s, samples, b);
  return b;
}

}  // namespace msomni::data
