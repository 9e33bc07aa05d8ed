// A flat-buffer model's checkpoint state in the model_state form: the tensors
// "param/<name>", then "adam_m/<name>", then "adam_v/<name>" (each group in layout order),
// the blob "optimizer/step" (int64) and, when the model has one, "model/signature" (a text
// fingerprint of its shape, so a checkpoint of another shape is refused by name rather than
// by a size mismatch). fuyu-tiny's checkpoints are exactly this.
//
//   model_state save_state() const override {
//     return save_flat_state(layout_, {params_, m_, v_}, step_);
//   }
//   void load_state(const model_state& st) override {
//     auto s = read_flat_state(layout_, st, "my-model");  // throws before anything changes
//     params_ = std::move(s.parameters); m_ = std::move(s.adam_m); v_ = std::move(s.adam_v);
//     step_ = s.step;
//   }
//
// Header-only.
#pragma once

#include "model/model_state.hpp"
#include "model/parameter_layout.hpp"

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace msomni::model {

// The three tensor groups of a flat state, in the order they are saved.
inline constexpr const char* flat_state_groups[] = {"param/", "adam_m/", "adam_v/"};

// Appends one entry per tensor of `layout`, named prefix + tensor name, with the tensor's
// slice of `flat` (a host buffer of layout.total floats).
inline void append_flat_tensors(model_state& st, const parameter_layout& layout, std::string_view prefix,
                                std::span<const float> flat) {
  if (flat.size() != static_cast<size_t>(layout.total))
    throw std::invalid_argument("append_flat_tensors: the buffer holds " + std::to_string(flat.size()) +
                                " floats; the layout has " + std::to_string(layout.total));
  for (const auto& p : layout.params) {
    const auto values = parameter_layout::slice(flat, p);
    st.tensors.push_back(state_tensor{std::string(prefix) + p.name, p.shape, std::vector<float>(values.begin(), values.end())});
  }
}

// Appends the blobs after the tensors: "optimizer/step", then "model/signature" unless
// `signature` is empty.
inline void append_flat_blobs(model_state& st, int64_t step, std::string_view signature = {}) {
  st.put_int64("optimizer/step", step);
  if (!signature.empty())
    st.blobs.push_back(state_blob{"model/signature", std::vector<uint8_t>(signature.begin(), signature.end())});
}

// Host copies of a flat model's parameters and AdamW moments, layout.total floats each.
struct flat_state_view {
  std::span<const float> parameters;
  std::span<const float> adam_m;
  std::span<const float> adam_v;
};

inline model_state save_flat_state(const parameter_layout& layout, const flat_state_view& v, int64_t step,
                                   std::string_view signature = {}) {
  model_state st;
  append_flat_tensors(st, layout, flat_state_groups[0], v.parameters);
  append_flat_tensors(st, layout, flat_state_groups[1], v.adam_m);
  append_flat_tensors(st, layout, flat_state_groups[2], v.adam_v);
  append_flat_blobs(st, step, signature);
  return st;
}

// What read_flat_state found: flat host buffers of layout.total floats and the step count.
struct flat_state_values {
  std::vector<float> parameters;
  std::vector<float> adam_m;
  std::vector<float> adam_v;
  int64_t step = 0;
};

// Checks `st` against `layout` and returns its values. Throws std::invalid_argument
// "<model> load_state: ..." naming the first problem, checked in this order: the signature
// (when `signature` is not empty: missing, or another shape's), the step blob (missing or
// not 8 bytes), each tensor (missing, or a value count other than its size). Reads only:
// a caller that assigns the result afterwards changes nothing when it throws.
inline flat_state_values read_flat_state(const parameter_layout& layout, const model_state& st, std::string_view model,
                                         std::string_view signature = {}) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string(model) + " load_state: " + why);
  };
  if (!signature.empty()) {
    const state_blob* sig = st.find_blob("model/signature");
    if (!sig) fail("missing blob 'model/signature'");
    const std::string have(sig->bytes.begin(), sig->bytes.end());
    if (have != signature) fail("checkpoint is of '" + have + "', this model is '" + std::string(signature) + "'");
  }
  flat_state_values out;
  if (!st.get_int64("optimizer/step", out.step)) fail("missing or mis-sized blob 'optimizer/step'");
  std::vector<float>* groups[] = {&out.parameters, &out.adam_m, &out.adam_v};
  for (size_t g = 0; g < 3; ++g) {
    groups[g]->assign(static_cast<size_t>(layout.total), 0.0f);
    for (const auto& p : layout.params) {
      const std::string name = flat_state_groups[g] + p.name;
      const state_tensor* t = st.find_tensor(name);
      if (!t) fail("missing tensor '" + name + "'");
      if (static_cast<int64_t>(t->values.size()) != p.size)
        fail("tensor '" + name + "' has " + std::to_string(t->values.size()) + " values, expected " +
             std::to_string(p.size));
      std::memcpy(groups[g]->data() + p.offset, t->values.data(), sizeof(float) * t->values.size());
    }
  }
  return out;
}

}  // namespace msomni::model
