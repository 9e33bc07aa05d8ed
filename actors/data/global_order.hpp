// The one global sample order of a job and the part of it one rank takes. Pure: no files,
// threads or clocks.
//
// Global sample i draws its source from the mixer (advanced through every i, by every rank,
// so the mix is a function of the seed alone); the n-th draw of source s takes draw n of
// that source's own order (source_reader.hpp). With G = world x micro_batch x grad_accum,
// micro-step k of optimizer step t on rank r takes the global samples
//   t*G + (k*world + r)*micro_batch + [0, micro_batch)
// (the layout of rank_worker/batch_source.hpp) — or, with a step balancer (data.balance =
// "steps"), the same step's samples placed on ranks and micro-batches by their predicted cost
// (step_balance.hpp): every rank computes the same placement from the same costs. Either way
// the samples of a step depend on the global batch only, never on the world size. The state
// at a step boundary (samples consumed, mixer, draws per source) does not mention the rank or
// the world size, so it is the same on every rank and resumes under any slot with the same
// global batch.
#pragma once

#include "mixer_core.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace msomni::data {

struct order_slot {
  uint32_t rank = 0;
  uint32_t world = 1;
  int64_t grad_accum = 1;
  int64_t micro_batch = 1;
  uint64_t global_batch() const { return uint64_t(world) * uint64_t(micro_batch) * uint64_t(grad_accum); }
  void validate() const;  // throws std::invalid_argument naming the bad field
  bool operator==(const order_slot&) const = default;
};

// Where the global order stands at an optimizer-step boundary. Identical on every rank.
struct global_position {
  uint64_t sample = 0;          // global samples consumed by completed optimizer steps
  mixer_state mixer;            // the mixer after drawing the sources of those samples
  std::vector<uint64_t> draws;  // per source: draws so far (absolute, across epochs)
  bool operator==(const global_position&) const = default;
};

// One of this rank's samples: its global index, its source and that source's draw number, and
// the place it fills: the global index dealing would put there, (k x world + r) x micro_batch
// + j of its step (the same as `global` unless the step is balanced). A micro-batch's index is
// its first place over micro_batch.
struct order_entry {
  uint64_t global = 0;
  uint32_t source = 0;
  uint64_t draw = 0;
  uint64_t place = 0;
  bool operator==(const order_entry&) const = default;
};

// The predicted cost of draw `draw` of source `source` (draw_costs.hpp); the same on every
// rank. Called from the stages that hold an order_core, so it must be thread-safe.
using draw_cost = std::function<double(uint32_t source, uint64_t draw)>;

class order_core {
 public:
  // At the start of the job; `balance` set: each step's samples are placed by their cost.
  order_core(mixer_core mixer, order_slot slot, std::shared_ptr<const draw_cost> balance = nullptr);
  // Continue from a step boundary, `micro_done` micro-batches into the next step (those are
  // skipped: they were consumed before the position was taken). micro_done < grad_accum.
  void restore(const global_position& p, uint64_t micro_done);

  // This rank's next sample, in consumption order (micro-batch by micro-batch).
  order_entry next();

  // The last step boundary at or before the entries returned so far, and how many of this
  // rank's micro-batches of the following step were returned (0 at a boundary).
  global_position boundary() const;
  uint64_t micro_done() const;
  const order_slot& slot() const noexcept { return slot_; }

  // Every rank's entries of the step starting at `p` (for tests and tools), by rank.
  static std::vector<std::vector<order_entry>> plan_step(mixer_core& mixer, const order_slot& slot, global_position& p,
                                                         const draw_cost* balance = nullptr);

 private:
  void plan_next_step();

  mixer_core mixer_;  // at after_ once a step is planned, at start_ before
  order_slot slot_;
  std::shared_ptr<const draw_cost> balance_;
  global_position start_, after_;
  std::vector<order_entry> own_;  // this rank's entries of the step [start_, after_)
  size_t taken_ = 0;
  bool planned_ = false;
};

}  // namespace msomni::data
