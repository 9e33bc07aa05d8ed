// The global sample order and a rank's share of it (see global_order.hpp).
#include "global_order.hpp"

#include "step_balance.hpp"

#include <stdexcept>

namespace msomni::data {

void order_slot::validate() const {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument("data slot: " + what + " (rank " + std::to_string(rank) + " of " + std::to_string(world) +
                                ", grad_accum " + std::to_string(grad_accum) + ", micro_batch " +
                                std::to_string(micro_batch) + ")");
  };
  if (world == 0 || rank >= world) bad("rank outside the world");
  if (grad_accum < 1) bad("grad_accum below 1");
  if (micro_batch < 1) bad("micro_batch below 1");
}

order_core::order_core(mixer_core mixer, order_slot slot, std::shared_ptr<const draw_cost> balance)
    : mixer_(std::move(mixer)), slot_(slot), balance_(std::move(balance)) {
  slot_.validate();
  start_.mixer = mixer_.state();
  start_.draws.assign(mixer_.sources(), 0);
}

void order_core::restore(const global_position& p, uint64_t micro_done) {
  if (p.draws.size() != mixer_.sources()) throw std::invalid_argument("data order: position has the wrong number of sources");
  if (micro_done >= uint64_t(slot_.grad_accum))
    throw std::invalid_argument("data order: " + std::to_string(micro_done) + " micro-batches done of a step of " +
                                std::to_string(slot_.grad_accum));
  mixer_.restore(p.mixer);
  start_ = p;
  planned_ = false;
  taken_ = 0;
  own_.clear();
  if (micro_done > 0) {
    plan_next_step();
    taken_ = size_t(micro_done * uint64_t(slot_.micro_batch));
  }
}

std::vector<std::vector<order_entry>> order_core::plan_step(mixer_core& mixer, const order_slot& slot, global_position& p,
                                                           const draw_cost* balance) {
  const uint64_t g = slot.global_batch();
  std::vector<order_entry> step;  // the step's samples in global order
  step.reserve(g);
  for (uint64_t off = 0; off < g; ++off) {
    const uint32_t s = mixer.next_source();
    step.push_back({p.sample + off, s, p.draws.at(s)++, p.sample + off});
  }
  std::vector<std::vector<uint64_t>> placement;
  if (balance) {
    std::vector<double> costs;
    costs.reserve(g);
    for (const auto& e : step) costs.push_back((*balance)(e.source, e.draw));
    placement = balance_step(costs, slot.world, slot.grad_accum, slot.micro_batch);
  } else {
    placement = deal_step(slot.world, slot.grad_accum, slot.micro_batch);
  }
  std::vector<std::vector<order_entry>> by_rank(slot.world);
  const uint64_t mb = uint64_t(slot.micro_batch);
  for (uint32_t r = 0; r < slot.world; ++r)
    for (size_t i = 0; i < placement[r].size(); ++i) {
      order_entry e = step[placement[r][i]];
      e.place = p.sample + ((uint64_t(i) / mb) * slot.world + r) * mb + uint64_t(i) % mb;
      by_rank[r].push_back(e);
    }
  p.sample += g;
  p.mixer = mixer.state();
  return by_rank;
}

void order_core::plan_next_step() {
  after_ = start_;
  // Every rank draws the whole step (cheap arithmetic) and keeps its own entries.
  own_ = std::move(plan_step(mixer_, slot_, after_, balance_.get())[slot_.rank]);
  taken_ = 0;
  planned_ = true;
}

order_entry order_core::next() {
  if (planned_ && taken_ == own_.size()) {
    start_ = after_;
    planned_ = false;
  }
  if (!planned_) plan_next_step();
  return own_[taken_++];
}

global_position order_core::boundary() const { return planned_ && taken_ == own_.size() ? after_ : start_; }

uint64_t order_core::micro_done() const {
  if (!planned_ || taken_ == own_.size()) return 0;
  return taken_ / uint64_t(slot_.micro_batch);
}

}  // namespace msomni::data
