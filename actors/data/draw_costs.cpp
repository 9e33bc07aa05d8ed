// draw_costs (see draw_costs.hpp).
#include "draw_costs.hpp"

#include <algorithm>

namespace msomni::data {

draw_costs::draw_costs(std::shared_ptr<const source_list> sources, batch_shape shape, cost_weights weights)
    : sources_(std::move(sources)), shape_(shape), weights_(weights), caches_(sources_->size()) {}

sample_shape draw_costs::shape_of_draw(uint32_t source, uint64_t draw) const {
  const source_index& src = sources_->at(source);
  const uint64_t n = src.samples_per_epoch();
  uint64_t caption = assumed_caption_bytes;
  if (n > 0) {
    const uint64_t epoch = draw / n, pos = draw % n;
    std::lock_guard<std::mutex> lock(mu_);
    auto& c = caches_[source];
    if (c.layout.epoch != epoch) {
      c.layout = src.layout(epoch);
      c.order.clear();
    }
    const auto& start = c.layout.start;
    const size_t p = c.layout.slot_of(pos);
    const size_t shard = c.layout.order[p];
    if (const auto listing = src.listed(shard); listing && !listing->empty()) {
      auto it = c.order.find(shard);
      if (it == c.order.end()) {
        if (c.order.size() >= 64) c.order.erase(c.order.begin());
        it = c.order.emplace(shard, src.sample_order(epoch, shard, listing->size())).first;
      }
      const uint64_t offset = pos - start[p];
      if (offset < it->second.size()) {
        const auto& sample = (*listing)[it->second[offset]];
        for (const auto& m : sample.members)
          if (use_of(split_member(m.name).second, src.spec().kind) == member_use::caption) caption = m.size;
      }
    }
  }
  return shape_of(src.spec().kind, caption, shape_);
}

double draw_costs::operator()(uint32_t source, uint64_t draw) const { return sample_cost(shape_of_draw(source, draw), weights_); }

std::shared_ptr<const draw_cost> balance_by(std::shared_ptr<const draw_costs> costs) {
  return std::make_shared<const draw_cost>([costs](uint32_t source, uint64_t draw) { return (*costs)(source, draw); });
}

}  // namespace msomni::data
