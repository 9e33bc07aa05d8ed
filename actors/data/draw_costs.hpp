// The step balancer's costs: the predicted cost (sample_cost.hpp) of any draw of any source,
// from the shard listings every rank walks at start (source_index): the draw's position in its
// source's order gives its shard and sample, the sample's caption member gives its text length,
// the source its modality. No byte of a sample is read. Every rank lists the same shards, so
// every rank computes the same costs. A source too large to keep its listings (over
// source_index::listing_samples_max samples) is costed by modality with a caption of
// assumed_caption_bytes.
// Thread-safe: the reader and tensor stages each ask it (one lock around small caches).
#pragma once

#include "global_order.hpp"
#include "sample_cost.hpp"
#include "source_reader.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace msomni::data {

class draw_costs {
 public:
  static constexpr uint64_t assumed_caption_bytes = 64;

  draw_costs(std::shared_ptr<const source_list> sources, batch_shape shape, cost_weights weights);
  double operator()(uint32_t source, uint64_t draw) const;
  // The shape (patches, tokens) of a draw, as its cost counts it.
  sample_shape shape_of_draw(uint32_t source, uint64_t draw) const;

 private:
  struct source_cache {
    epoch_layout layout;                       // the last epoch asked for
    std::map<size_t, std::vector<size_t>> order;  // that epoch's sample order per shard (bounded)
  };
  std::shared_ptr<const source_list> sources_;
  batch_shape shape_;
  cost_weights weights_;
  mutable std::mutex mu_;
  mutable std::vector<source_cache> caches_;
};

// The order_core's cost function over a draw_costs.
std::shared_ptr<const draw_cost> balance_by(std::shared_ptr<const draw_costs> costs);

}  // namespace msomni::data
