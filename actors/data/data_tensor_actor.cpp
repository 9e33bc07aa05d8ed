// The tensor stage actor: decoded samples placed in batch slots, packed as they arrive, and
// complete batches handed to the consumer (see data_stage_actors.hpp).
#include "data_stage_actors.hpp"

#include "model_batch.hpp"
#include "tensorizer.hpp"

#include "messages/catalog.hpp"  // the inspect overloads of the data messages this actor sends
#include "metrics/accounted_actor.hpp"

#include <algorithm>
#include <optional>
#include <thread>

namespace msomni::data::stage {
namespace {

struct tensor_state {
  // Set: pack the model's batch too, in this memory. First, so that it outlives every member
  // that may hold batches packed in it.
  std::shared_ptr<std::pmr::memory_resource> batch_memory;
  std::unique_ptr<tensor_core> core;
  batch_shape shape;
  caf::actor pool;
  std::shared_ptr<batch_handoff> handoff;       // packed batches to the consumer
  std::unique_ptr<credit_batcher> pool_grants;  // half a depth per message to the pool
  std::optional<double> share_sent;             // the pool acts on the downgrade share only
  std::vector<batch_ptr> spare;  // buffers handed back by the consumer, reused by pack
  batch_ptr filling;              // the batch whose slots are being packed
  double filling_pack_ms = 0;     // time spent packing its slots so far
  size_t spare_max = 2;
  bad_data_counts bad;
  data_metrics metrics;
  std::string failure;
  std::shared_ptr<const msomni::clock> clock;
  std::shared_ptr<pixel_pool> pixels;
  std::shared_ptr<live_data_metrics> live;
  uint32_t batch_queue = 1;       // batches the hand-off holds at most
  // The consumer's step, from taking a batch to asking for the next, as the consumer measured
  // it: measured here it would include the time spent packing, so a slow tensor stage would
  // always look as slow as the consumer and never saturated.
  double consumer_step_ms = 0;
  double test_extra_pack_ms_per_frame = 0;
};

using tensor_actor_ptr = metrics::accounted_stateful_actor<tensor_state>*;

void publish(tensor_state& st, const live_data_metrics::bad_counts& bad_before) {
  auto& live = *st.live;
  live.decoder.fill.store(st.core->backlog(), relaxed);
  live.decoder.capacity.store(st.core->capacity(), relaxed);
  const uint32_t ready = std::min(st.core->ready_batches(), st.batch_queue);
  live.tensor.set(ready, st.batch_queue, st.batch_queue - ready);
  live.count_bad(bad_before, st.bad.count);
}

// Packs slot `i`, just placed by the core, into the batch being filled (begun on a spare
// buffer when none is); its pixels go straight back to the decoders.
void pack_placed(tensor_state& st, uint32_t i) {
  const time_point t0 = st.clock->now();
  if (!st.filling) {
    if (st.spare.empty()) {
      st.filling = std::make_shared<micro_batch>();
    } else {
      st.filling = std::move(st.spare.back());
      st.spare.pop_back();
    }
    pack_begin(st.shape, *st.filling);
  }
  decoded_sample& x = st.core->slot(i);
  pack_slot(st.shape, i, x, *st.filling);
  st.pixels->give(std::move(x.pixels));
  st.filling_pack_ms += ms_since(*st.clock, t0);
}

// The filled batch of `samples` to the consumer, with its timing for the core.
void hand_over(tensor_state& st, const std::vector<decoded_sample>& samples) {
  const time_point t0 = st.clock->now();
  batch_ptr b = std::move(st.filling);
  b->index = st.core->last_batch_global() / uint64_t(st.shape.batch);
  uint32_t unique = 0, full = 0;
  for (const auto& x : samples) {
    unique += x.unique_frames;
    full += x.frames;
  }
  if (st.test_extra_pack_ms_per_frame > 0)  // test knob (pipeline_setup): slow packing on purpose
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(st.test_extra_pack_ms_per_frame * unique));
  handed_batch h{st.batch_memory, b, st.core->position_after_last_batch(), std::nullopt};
  if (st.batch_memory) h.packed.emplace(to_model_batch(*b, st.batch_memory.get()));  // counted as packing
  st.core->on_batch_timing(st.filling_pack_ms + ms_since(*st.clock, t0), unique, full, st.consumer_step_ms);
  st.filling_pack_ms = 0;
  st.handoff->push(std::move(h));
}

// Packs what the core places until no slot can be filled; returns whether a batch was handed
// over. Throws what the core throws (a source that yields only damage).
bool pack_ready(tensor_actor_ptr self) {
  auto& st = self->state;
  bool packed_one = false;
  while (true) {
    std::vector<msg::credit_grant> up;
    while (const auto i = st.core->fill_slot(up, st.bad)) pack_placed(st, *i);
    st.pool_grants->add(up);
    for (const auto& g : st.pool_grants->take()) self->send(st.pool, g);
    auto samples = st.core->take_batch();
    if (!samples) return packed_one;
    hand_over(st, *samples);
    packed_one = true;
  }
}

// Each sample is packed into its slot as soon as the core places it (with one decode worker
// that is right after its decode, while its pixels are still in cache) and its pixels go
// straight back to the decoders, so few buffers circulate. Measured at 1 worker (share of
// the wall time spent decoding, 4 runs each): 0.884 against 0.874 packing whole batches.
// A complete batch goes to the hand-off at once; the core's ready-batch bound (batch_queue)
// holds packing back until the consumer takes one.
void pack(tensor_actor_ptr self) {
  auto& st = self->state;
  if (!st.failure.empty()) return;  // the first failure stands; the cores stopped mid-batch
  bool packed_one = false;
  const uint64_t bad_before = st.bad.total();
  const auto bad_counts_before = st.bad.count;
  try {
    packed_one = pack_ready(self);
  } catch (const std::exception& e) {
    st.failure = e.what();
  }
  if (st.bad.total() != bad_before) st.handoff->publish_bad(st.bad);  // before a failure is seen
  if (st.live) publish(st, bad_counts_before);
  if (!st.failure.empty()) st.handoff->fail(st.failure);
  // Sent when a batch was packed or the downgrade share moved (the pool acts on nothing else
  // in the message; one per decoded sample before).
  const msg::stage_pressure p = st.core->pressure(0, uint32_t(st.handoff->waiting()));
  if (packed_one || st.share_sent != p.downgrade_share) {
    self->send(st.pool, p);
    st.share_sent = p.downgrade_share;
  }
}

// consumer -> tensor, after it took a batch from the hand-off: `done` is the previous batch's
// buffers (or null), then its step before asking and how long it waited.
void on_taken(tensor_actor_ptr self, batch_ptr& done, double consumer_step_ms, double wait_ms) {
  auto& st = self->state;
  if (done && done.use_count() == 1 && st.spare.size() < st.spare_max) st.spare.push_back(std::move(done));
  if (consumer_step_ms > 0) st.consumer_step_ms = consumer_step_ms;
  ++st.metrics.batches;
  st.metrics.data_wait_ms_total += wait_ms;
  st.metrics.data_wait_ms_max = std::max(st.metrics.data_wait_ms_max, wait_ms);
  st.core->on_batch_taken();
  st.core->on_consumer_wait(consumer_step_ms, wait_ms);
  pack(self);  // a taken batch frees a queue slot: assemble what the buffers already hold
}

caf::behavior tensor_actor(tensor_actor_ptr self, pipeline_setup setup, order_slot slot, pipeline_position start,
                           std::shared_ptr<pixel_pool> pixels, std::shared_ptr<const msomni::clock> clock,
                           std::shared_ptr<batch_handoff> handoff) {
  self->account_as("data_tensor", setup.registry);
  auto& st = self->state;
  st.clock = std::move(clock);
  st.handoff = std::move(handoff);
  st.pixels = std::move(pixels);
  st.live = setup.live;
  st.core = std::make_unique<tensor_core>(start.sources, setup.pool.source_kinds, setup.depth,
                                          make_order(setup, slot), setup.batch_queue);
  st.core->restore(start);
  st.core->set_decode_workers(setup.pool.workers);
  st.pool_grants = std::make_unique<credit_batcher>(half_depths(setup.depth));
  st.shape = setup.shape;
  st.spare_max = setup.batch_queue + 1;
  st.batch_queue = std::max<uint32_t>(1, setup.batch_queue);
  st.test_extra_pack_ms_per_frame = setup.test_extra_pack_ms_per_frame;
  st.batch_memory = setup.batch_memory;
  return {
      [=](wire_atom, caf::actor pool) {
        self->state.pool = pool;
        for (const auto& g : self->state.core->initial_credits()) self->send(pool, g);
      },
      [=](const std::shared_ptr<decoded_sample>& s) {  // pool -> tensor, within its credits
        self->state.core->on_decoded(std::move(*s));
        pack(self);
      },
      [=](taken_atom, batch_ptr& done, double consumer_step_ms, double wait_ms) {
        on_taken(self, done, consumer_step_ms, wait_ms);
      },
      [=](fail_atom, const std::string& why) {
        if (self->state.failure.empty()) self->state.failure = why;
        self->state.handoff->fail(why);
      },
      [=](stats_atom, bool) { return std::make_shared<data_metrics>(self->state.metrics); },
  };
}

}  // namespace

caf::actor spawn_tensor(caf::actor_system& sys, pipeline_setup setup, order_slot slot, pipeline_position start,
                        std::shared_ptr<pixel_pool> pixels, std::shared_ptr<const msomni::clock> clock,
                        std::shared_ptr<batch_handoff> handoff) {
  return sys.spawn(tensor_actor, std::move(setup), slot, std::move(start), std::move(pixels), std::move(clock),
                   std::move(handoff));
}

}  // namespace msomni::data::stage
