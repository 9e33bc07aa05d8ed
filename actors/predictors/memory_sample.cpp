// The feature vector of a batch (see memory_sample.hpp for why these columns).
#include "memory_sample.hpp"

namespace msomni::predict {

std::array<double, batch_feature_count> batch_feature_vector(const batch_features& b) {
  const double mb = static_cast<double>(b.micro_batch);
  const double s = static_cast<double>(b.seq_len);
  return {mb * s * 1e-3,
          mb * s * s * 1e-6,
          static_cast<double>(b.image_patches) * 1e-3,
          static_cast<double>(b.video_patches) * 1e-3,
          static_cast<double>(b.text_tokens) * 1e-3,
          static_cast<double>(b.image_samples),
          static_cast<double>(b.video_samples),
          static_cast<double>(b.text_samples)};
}

}  // namespace msomni::predict
