// Making a micro-batch fit (see batch_fit.hpp).
#include "batch_fit.hpp"

#include "model/text_tokens.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace msomni::rank_worker {

namespace {

// A sample's text positions: up to its last token that is not padding (at least 1).
int64_t text_length(const model::micro_batch& mb, int64_t b) {
  for (int64_t t = mb.text_len; t > 1; --t) {
    const auto i = static_cast<size_t>(b * mb.text_len + t - 1);
    if (mb.tokens[i] != model::token_pad || mb.loss_mask[i] != 0) return t;
  }
  return 1;
}

struct sample_shape {
  int64_t patches = 0, text = 0;
  int64_t length() const { return patches + text; }
};

struct part_shape {
  std::vector<int64_t> samples;
  int64_t max_patches = 0, max_text = 0;
  int64_t seq_len_with(const sample_shape& s) const {
    return std::max(max_patches, s.patches) + std::max(max_text, s.text);
  }
};

}  // namespace

namespace {

double allowance_under(double limit_bytes, const fit_target& t, const activation_bytes_fn& activations) {
  const double forecast_activations =
      t.forecast_rows > 0 && t.forecast_seq_len > 0 ? static_cast<double>(activations(t.forecast_rows, t.forecast_seq_len)) : 0.0;
  const double stays = t.resident_bytes > 0 ? t.resident_bytes : std::max(0.0, t.forecast_bytes - forecast_activations);
  return limit_bytes - stays;
}

}  // namespace

double activation_allowance(const fit_target& t, const activation_bytes_fn& activations) {
  return allowance_under(t.budget_bytes, t, activations);
}

double cut_allowance(const fit_target& t, const activation_bytes_fn& activations) {
  return allowance_under(std::max(t.budget_bytes, t.device_bytes), t, activations);
}

fit_plan plan_fit(const model::micro_batch& mb, double allow_bytes, double cut_allow_bytes,
                  const activation_bytes_fn& activations, int64_t patches_per_frame) {
  cut_allow_bytes = std::max(cut_allow_bytes, allow_bytes);
  fit_plan plan;
  const int64_t B = mb.batch;
  std::vector<int64_t> all(static_cast<size_t>(B));
  std::iota(all.begin(), all.end(), 0);
  if (static_cast<double>(activations(B, mb.max_patches + mb.text_len)) <= allow_bytes) {
    plan.parts.push_back(std::move(all));
    return plan;
  }
  std::vector<sample_shape> shape(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) shape[static_cast<size_t>(b)] = {mb.patch_counts[static_cast<size_t>(b)], text_length(mb, b)};
  std::vector<int64_t> order = all;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return shape[static_cast<size_t>(a)].length() > shape[static_cast<size_t>(b)].length();
  });
  std::vector<part_shape> parts;
  for (const int64_t b : order) {
    auto& s = shape[static_cast<size_t>(b)];
    bool placed = false;
    for (auto& p : parts) {  // first fit, longest first
      const auto rows = static_cast<int64_t>(p.samples.size()) + 1;
      if (static_cast<double>(activations(rows, p.seq_len_with(s))) <= allow_bytes) {
        p.samples.push_back(b);
        p.max_patches = std::max(p.max_patches, s.patches);
        p.max_text = std::max(p.max_text, s.text);
        placed = true;
        break;
      }
    }
    if (placed) continue;
    if (static_cast<double>(activations(1, s.length())) > cut_allow_bytes &&
        mb.modalities[static_cast<size_t>(b)] == modality::video && patches_per_frame > 0 && s.patches > patches_per_frame) {
      s.patches = patches_per_frame;
      plan.keyframe_cuts.push_back(b);
      plan.keyframe_patches = patches_per_frame;
    }
    if (static_cast<double>(activations(1, s.length())) > allow_bytes) plan.fits = false;
    parts.push_back({{b}, s.patches, s.text});
  }
  for (auto& p : parts) {
    std::sort(p.samples.begin(), p.samples.end());
    plan.parts.push_back(std::move(p.samples));
  }
  std::sort(plan.keyframe_cuts.begin(), plan.keyframe_cuts.end());
  return plan;
}

std::vector<model::micro_batch> split_micro_batch(const model::micro_batch& mb, const fit_plan& plan,
                                                  std::pmr::memory_resource* memory) {
  std::vector<int> seen(static_cast<size_t>(mb.batch), 0);
  for (const auto& p : plan.parts)
    for (const int64_t b : p) {
      if (b < 0 || b >= mb.batch) throw std::invalid_argument("split_micro_batch: sample " + std::to_string(b) + " is not in the batch");
      ++seen[static_cast<size_t>(b)];
    }
  for (int64_t b = 0; b < mb.batch; ++b)
    if (seen[static_cast<size_t>(b)] != 1)
      throw std::invalid_argument("split_micro_batch: sample " + std::to_string(b) + " is in " +
                                  std::to_string(seen[static_cast<size_t>(b)]) + " parts, not one");
  auto kept_patches = [&](int64_t b) {
    const int32_t c = mb.patch_counts[static_cast<size_t>(b)];
    if (!std::binary_search(plan.keyframe_cuts.begin(), plan.keyframe_cuts.end(), b)) return c;
    return std::min<int32_t>(c, static_cast<int32_t>(plan.keyframe_patches));
  };
  const int64_t D = mb.patch_dim, P_in = mb.max_patches, T_in = mb.text_len;
  std::vector<model::micro_batch> out;
  out.reserve(plan.parts.size());
  for (const auto& p : plan.parts) {
    const auto rows = static_cast<int64_t>(p.size());
    model::micro_batch part{.batch = rows, .max_patches = 0, .patch_dim = D, .text_len = 1,
                            .patches = std::pmr::vector<float>(memory), .patch_counts = {}, .tokens = {},
                            .loss_mask = {}, .modalities = {}};
    for (const int64_t b : p) {
      const int32_t c = kept_patches(b);
      part.patch_counts.push_back(c);
      part.max_patches = std::max<int64_t>(part.max_patches, c);
      part.text_len = std::max(part.text_len, text_length(mb, b));
      part.modalities.push_back(mb.modalities[static_cast<size_t>(b)]);
    }
    const int64_t P = part.max_patches, T = part.text_len;
    part.patches.assign(static_cast<size_t>(rows * P * D), 0.0f);
    part.tokens.assign(static_cast<size_t>(rows * T), model::token_pad);
    part.loss_mask.assign(static_cast<size_t>(rows * T), 0);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = p[static_cast<size_t>(r)];
      const auto kept = static_cast<int64_t>(part.patch_counts[static_cast<size_t>(r)]);
      std::copy_n(mb.patches.begin() + b * P_in * D, kept * D, part.patches.begin() + r * P * D);
      const int64_t t_len = std::min(T, T_in);
      std::copy_n(mb.tokens.begin() + b * T_in, t_len, part.tokens.begin() + r * T);
      std::copy_n(mb.loss_mask.begin() + b * T_in, t_len, part.loss_mask.begin() + r * T);
    }
    out.push_back(std::move(part));
  }
  return out;
}

std::string describe(const fit_plan& plan) {
  if (!plan.changed()) return "as is";
  std::string t = std::to_string(plan.parts.size()) + (plan.parts.size() == 1 ? " part (" : " parts (");
  for (size_t i = 0; i < plan.parts.size(); ++i) t += (i ? "+" : "") + std::to_string(plan.parts[i].size());
  t += " samples)";
  if (!plan.keyframe_cuts.empty())
    t += ", " + std::to_string(plan.keyframe_cuts.size()) + (plan.keyframe_cuts.size() == 1 ? " video" : " videos") +
         " cut to the keyframe";
  if (!plan.fits) t += ", still over the allowance";
  return t;
}

}  // namespace msomni::rank_worker
