// sample_cost (see sample_cost.hpp).
#include "sample_cost.hpp"

#include <algorithm>

namespace msomni::data {

cost_weights transformer_cost_weights(int64_t d_model, int64_t d_ff) {
  const double d = double(std::max<int64_t>(d_model, 1)), ff = double(std::max<int64_t>(d_ff, 1));
  return {4.0 * d * d + 2.0 * d * ff, 2.0 * d};
}

sample_shape shape_of(modality kind, uint64_t caption_bytes, const batch_shape& shape) {
  sample_shape s;
  if (kind == modality::image) s.patches = shape.patches_per_frame();
  if (kind == modality::video) s.patches = shape.max_patches();
  s.tokens = std::min<int64_t>(int64_t(std::min<uint64_t>(caption_bytes, uint64_t(INT32_MAX))) + 2, shape.max_tokens());
  return s;
}

double sample_cost(const sample_shape& s, const cost_weights& w) {
  const double l = double(s.positions());
  return w.linear * l + w.quadratic * l * l;
}

}  // namespace msomni::data
