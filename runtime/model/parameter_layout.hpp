// The flat-buffer layout of a model's parameters: named tensors, each a slice of ONE
// parameter buffer (and, at the same offsets, of the gradient buffer and both AdamW
// moments). Declare the tensors once, in a fixed order; `params` is what
// trainable_model::parameters() returns and `total` the length of every flat buffer.
//
//   parameter_layout l;
//   const int64_t w = l.add("proj.w", {in, out}, true);   // decayed by AdamW
//   const int64_t b = l.add("proj.b", {out}, false);      // not decayed
//   std::vector<float> params(l.total);                   // proj.w at [w, w + in*out)
//
// Header-only: a plugin needs no msomni library for it.
#pragma once

#include "model/model.hpp"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace msomni::model {

struct parameter_layout {
  std::vector<parameter_info> params;  // in declaration order, offsets ascending, no gaps
  int64_t total = 0;                   // floats in each flat buffer

  // Appends a tensor and returns its offset. `weight_decay`: AdamW decays it (matrices,
  // embeddings), or not (biases, norm gains). Throws std::invalid_argument for an empty
  // name, a name declared before, or a dimension that is not positive.
  int64_t add(std::string name, std::vector<int64_t> shape, bool weight_decay) {
    if (name.empty()) throw std::invalid_argument("parameter_layout: a tensor needs a name");
    if (find(name)) throw std::invalid_argument("parameter_layout: tensor '" + name + "' is declared twice");
    int64_t size = 1;
    for (int64_t s : shape) {
      if (s <= 0)
        throw std::invalid_argument("parameter_layout: tensor '" + name + "' has dimension " + std::to_string(s) +
                                    " (dimensions must be positive)");
      size *= s;
    }
    const int64_t offset = total;
    params.push_back(parameter_info{std::move(name), std::move(shape), offset, size, weight_decay});
    total += size;
    return offset;
  }

  // The tensor named `name`, or null.
  const parameter_info* find(std::string_view name) const {
    for (const auto& p : params)
      if (p.name == name) return &p;
    return nullptr;
  }

  // Tensor `p`'s slice of a flat buffer of this layout.
  template <class T>
  static std::span<T> slice(std::span<T> flat, const parameter_info& p) {
    return flat.subspan(static_cast<size_t>(p.offset), static_cast<size_t>(p.size));
  }
};

}  // namespace msomni::model
