// The data stages as CAF actors around the policy cores (see data_actors.hpp). Each handler
// turns a message into core calls and the core's decisions into messages; no policy here.
#include "data_actors.hpp"

#include "batch_handoff.hpp"
#include "mismatched_names.hpp"
#include "model_batch.hpp"
#include "pipeline_state.hpp"
#include "sample_repair.hpp"
#include "tensorizer.hpp"

#include "messages/catalog.hpp"  // the inspect overloads of the data messages these actors send
#include "metrics/accounted_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <numeric>
#include <thread>
#include <utility>

// Samples and batches never leave the rank process, so they travel as shared pointers.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<msomni::data::raw_sample>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<std::vector<msomni::data::raw_sample>>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<msomni::data::decoded_sample>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<msomni::data::micro_batch>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<msomni::data::data_metrics>)

namespace msomni::data {
namespace {

using wire_atom = caf::atom_constant<caf::atom("dwire")>;
using taken_atom = caf::atom_constant<caf::atom("dtaken")>;
using fail_atom = caf::atom_constant<caf::atom("dfail")>;
using decode_atom = caf::atom_constant<caf::atom("ddecode")>;
using done_atom = caf::atom_constant<caf::atom("ddone")>;
using stats_atom = caf::atom_constant<caf::atom("dstats")>;

using batch_ptr = std::shared_ptr<micro_batch>;

double ms_since(const msomni::clock& c, time_point t) { return std::chrono::duration<double, std::milli>(c.now() - t).count(); }

constexpr auto relaxed = std::memory_order_relaxed;


// reader: reads one of this rank's samples per credit, in the reader core's order, and sends
// what one grant allowed as one message. Sender of credits: pool.
struct reader_state {
  std::unique_ptr<own_reader> reader;
  std::unique_ptr<reader_core> core;
};

caf::behavior reader_actor(metrics::accounted_stateful_actor<reader_state>* self, std::shared_ptr<own_reader> reader,
                           size_t sources, caf::actor pool, caf::actor tensor,
                           std::shared_ptr<metrics::metrics_registry> registry, std::shared_ptr<live_data_metrics> live) {
  self->account_as("data_reader", std::move(registry));
  self->state.reader = std::make_unique<own_reader>(std::move(*reader));
  self->state.core = std::make_unique<reader_core>(sources);
  return {
      // pool -> reader: additive, so a repeat would over-grant; the pool sends each once.
      [=](const msg::credit_grant& g) {
        auto& st = self->state;
        st.core->on_credit(g);
        auto batch = std::make_shared<std::vector<raw_sample>>();
        std::string failure;
        try {
          while (auto s = st.core->next_read([&](uint32_t x) { return st.reader->ready(x); }))
            batch->push_back(st.reader->next(*s));
        } catch (const std::exception& e) {
          failure = e.what();
        }
        if (!batch->empty()) self->send(pool, std::move(batch));
        if (!failure.empty()) self->send(tensor, fail_atom::value, failure);
        if (live) live->reader.credits.store(st.core->credits_total(), relaxed);
      },
  };
}

// worker: decodes one sample at a time with its own decoder (and fetcher, for replacements of
// bad samples) and reports to the pool.
caf::behavior worker_actor(metrics::accounted_actor* self, decode_options opts, std::shared_ptr<pixel_pool> pixels,
                           std::shared_ptr<const source_list> sources, std::shared_ptr<const storage> st, caf::actor pool,
                           std::shared_ptr<metrics::metrics_registry> registry) {
  self->account_as("decode_worker", std::move(registry));  // one series for all: bounded
  auto decoder = std::make_shared<media_decoder>(opts, std::move(pixels));
  auto fetcher = std::make_shared<sample_fetcher>(std::move(sources), std::move(st));
  auto clock = std::make_shared<real_clock>();
  return {
      [=](decode_atom, uint32_t worker, const std::shared_ptr<raw_sample>& raw, bool keyframe_only) {
        const time_point t0 = clock->now();
        auto out = std::make_shared<decoded_sample>(
            decode_or_replace(*decoder, *fetcher, *raw, keyframe_only, tensor_core::max_bad_run));
        out->decode_ms = ms_since(*clock, t0);
        self->send(pool, done_atom::value, worker, out);
      },
  };
}

struct pool_state {
  std::unique_ptr<decode_pool_core> core;
  std::unique_ptr<media_decoder> inline_decoder;  // text: no worker needed
  std::unique_ptr<sample_fetcher> inline_fetcher;
  std::vector<caf::actor> workers;
  std::vector<uint32_t> busy;  // samples held per worker (at most per_worker)
  std::unique_ptr<credit_batcher> reader_grants;  // half a depth per message to the reader
  caf::actor reader, tensor;
  uint64_t downgrades_published = 0;  // of core->downgrades(), added to the live counts
  mismatched_names mismatched;        // decoded by bytes another format than their names
};

// `mismatched_total`: the pipeline's count of samples decoded by bytes another format than
// their names, kept across the stage actors a reslot or restore replaces.
caf::behavior pool_actor(metrics::accounted_stateful_actor<pool_state>* self, pipeline_setup setup,
                         std::shared_ptr<pixel_pool> pixels, std::shared_ptr<const source_list> sources,
                         std::shared_ptr<const storage> storage, caf::actor tensor,
                         std::shared_ptr<std::atomic<uint64_t>> mismatched_total) {
  self->account_as("decode_pool", setup.registry);
  auto& st = self->state;
  setup.pool.per_worker = 2;
  st.core = std::make_unique<decode_pool_core>(setup.pool);
  st.reader_grants = std::make_unique<credit_batcher>(half_depths(setup.depth));
  const decode_options opts = decode_options_of(setup);
  st.inline_decoder = std::make_unique<media_decoder>(opts, pixels);
  st.inline_fetcher = std::make_unique<sample_fetcher>(sources, storage);
  st.tensor = tensor;
  for (uint32_t i = 0; i < setup.pool.workers; ++i)
    st.workers.push_back(self->spawn<caf::linked>(worker_actor, opts, pixels, sources, storage,
                                                  caf::actor_cast<caf::actor>(self), setup.registry));
  st.busy.assign(st.workers.size(), 0);
  const uint32_t depth_total = std::accumulate(setup.depth.begin(), setup.depth.end(), 0u);
  auto live = setup.live;
  auto clock = std::make_shared<real_clock>();
  auto publish = [self, live, depth_total] {
    auto& st = self->state;
    live->reader.fill.store(st.core->queued(), relaxed);
    live->reader.capacity.store(depth_total, relaxed);
    live->decoder.credits.store(st.core->tensor_credits_total(), relaxed);
    live->count_downgrades(st.core->downgrades() - std::exchange(st.downgrades_published, st.core->downgrades()));
  };
  auto dispatch = [self, live, clock, publish] {
    auto& st = self->state;
    std::vector<msg::credit_grant> up;
    while (auto d = st.core->next_dispatch(up)) {
      if (!d->needs_worker) {
        const time_point t0 = live ? clock->now() : time_point{};
        auto out = std::make_shared<decoded_sample>(
            decode_or_replace(*st.inline_decoder, *st.inline_fetcher, d->sample, false, tensor_core::max_bad_run));
        if (live) live->count_decoded(out->kind, ms_since(*clock, t0));
        self->send(st.tensor, std::move(out));
        continue;
      }
      // The least loaded worker; the core never dispatches past workers x per_worker.
      const auto w = uint32_t(std::min_element(st.busy.begin(), st.busy.end()) - st.busy.begin());
      ++st.busy[w];
      self->send(st.workers[w], decode_atom::value, w, std::make_shared<raw_sample>(std::move(d->sample)), d->keyframe_only);
    }
    st.reader_grants->add(up);
    for (const auto& g : st.reader_grants->take()) self->send(st.reader, g);
    if (live) publish();
  };
  return {
      [=](wire_atom, caf::actor reader) {
        self->state.reader = reader;
        for (const auto& g : self->state.core->initial_reader_credits()) self->send(reader, g);
      },
      [=](const std::shared_ptr<std::vector<raw_sample>>& raws) {  // reader -> pool, within its credits
        for (auto& raw : *raws) self->state.core->on_raw(std::move(raw));
        dispatch();
      },
      [=](const msg::credit_grant& g) {  // tensor -> pool
        self->state.core->on_tensor_credit(g);
        dispatch();
      },
      [=](const msg::stage_pressure& p) { self->state.core->on_pressure(p); },  // latest wins
      [=](done_atom, uint32_t worker, const std::shared_ptr<decoded_sample>& out) {
        auto& st = self->state;
        --st.busy.at(worker);
        st.core->on_done(out->kind, out->decode_ms);
        if (live) live->count_decoded(out->kind, out->decode_ms);
        if (st.mismatched.note(*out)) {
          mismatched_total->fetch_add(1, relaxed);
          if (live) live->count_mismatched_name();
        }
        self->send(st.tensor, out);
        dispatch();
      },
      [=](stats_atom) { return self->state.core->downgrades(); },
  };
}

struct tensor_state {
  // Set: pack the model's batch too, in this memory. First, so that it outlives every member
  // that may hold batches packed in it.
  std::shared_ptr<std::pmr::memory_resource> batch_memory;
  std::unique_ptr<tensor_core> core;
  batch_shape shape;
  caf::actor pool;
  std::shared_ptr<batch_handoff> handoff;       // packed batches to the consumer
  std::unique_ptr<credit_batcher> pool_grants;  // half a depth per message to the pool
  std::optional<bool> saturated_sent;           // the pool acts on the flag only
  std::vector<batch_ptr> spare;  // buffers handed back by the consumer, reused by pack
  batch_ptr filling;              // the batch whose slots are being packed
  double filling_pack_ms = 0;     // time spent packing its slots so far
  size_t spare_max = 2;
  bad_data_counts bad;
  data_metrics metrics;
  std::string failure;
  std::shared_ptr<const msomni::clock> clock;
  // The consumer's step, from taking a batch to asking for the next, as the consumer measured
  // it: measured here it would include the time spent packing, so a slow tensor stage would
  // always look as slow as the consumer and never saturated.
  double consumer_step_ms = 0;
  double test_extra_pack_ms_per_frame = 0;
};

caf::behavior tensor_actor(metrics::accounted_stateful_actor<tensor_state>* self, pipeline_setup setup, order_slot slot,
                           pipeline_position start, std::shared_ptr<pixel_pool> pixels,
                           std::shared_ptr<const msomni::clock> clock, std::shared_ptr<batch_handoff> handoff) {
  self->account_as("data_tensor", setup.registry);
  auto& st = self->state;
  st.clock = std::move(clock);
  st.handoff = std::move(handoff);
  st.core = std::make_unique<tensor_core>(start.sources, setup.pool.source_kinds, setup.depth,
                                          make_order(setup, slot), setup.batch_queue);
  st.core->restore(start);
  st.core->set_decode_workers(setup.pool.workers);
  st.pool_grants = std::make_unique<credit_batcher>(half_depths(setup.depth));
  st.shape = setup.shape;
  st.spare_max = setup.batch_queue + 1;
  st.test_extra_pack_ms_per_frame = setup.test_extra_pack_ms_per_frame;
  st.batch_memory = setup.batch_memory;
  // Each sample is packed into its slot as soon as the core places it (with one decode worker
  // that is right after its decode, while its pixels are still in cache) and its pixels go
  // straight back to the decoders, so few buffers circulate. Measured at 1 worker (share of
  // the wall time spent decoding, 4 runs each): 0.884 against 0.874 packing whole batches.
  // A complete batch goes to the hand-off at once; the core's ready-batch bound (batch_queue)
  // holds packing back until the consumer takes one.
  const uint32_t batch_queue = std::max<uint32_t>(1, setup.batch_queue);
  auto publish = [self, live = setup.live, batch_queue](const live_data_metrics::bad_counts& bad_before) {
    auto& st = self->state;
    live->decoder.fill.store(st.core->backlog(), relaxed);
    live->decoder.capacity.store(st.core->capacity(), relaxed);
    const uint32_t ready = std::min(st.core->ready_batches(), batch_queue);
    live->tensor.set(ready, batch_queue, batch_queue - ready);
    live->count_bad(bad_before, st.bad.count);
  };
  auto pack = [self, pixels, live = setup.live, publish] {
    auto& st = self->state;
    if (!st.failure.empty()) return;  // the first failure stands; the cores stopped mid-batch
    bool packed_one = false;
    const uint64_t bad_before = st.bad.total();
    const auto bad_counts_before = st.bad.count;
    try {
      while (true) {
        std::vector<msg::credit_grant> up;
        while (const auto i = st.core->fill_slot(up, st.bad)) {
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
          decoded_sample& x = st.core->slot(*i);
          pack_slot(st.shape, *i, x, *st.filling);
          pixels->give(std::move(x.pixels));  // back to the decoders
          st.filling_pack_ms += ms_since(*st.clock, t0);
        }
        st.pool_grants->add(up);
        for (const auto& g : st.pool_grants->take()) self->send(st.pool, g);
        auto samples = st.core->take_batch();
        if (!samples) break;
        const time_point t0 = st.clock->now();
        batch_ptr b = std::move(st.filling);
        b->index = st.core->last_batch_global() / uint64_t(st.shape.batch);
        uint32_t unique = 0, full = 0;
        for (const auto& x : *samples) {
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
        packed_one = true;
      }
    } catch (const std::exception& e) {
      st.failure = e.what();
    }
    if (st.bad.total() != bad_before) st.handoff->publish_bad(st.bad);  // before a failure is seen
    if (live) publish(bad_counts_before);
    if (!st.failure.empty()) st.handoff->fail(st.failure);
    // Saturation follows batch timings, so it can change only when a batch was packed; the
    // pool acts on nothing else in the message (one per decoded sample before).
    const msg::stage_pressure p = st.core->pressure(0, uint32_t(st.handoff->waiting()));
    if (packed_one || st.saturated_sent != p.saturated) {
      self->send(st.pool, p);
      st.saturated_sent = p.saturated;
    }
  };
  return {
      [=](wire_atom, caf::actor pool) {
        self->state.pool = pool;
        for (const auto& g : self->state.core->initial_credits()) self->send(pool, g);
      },
      [=](const std::shared_ptr<decoded_sample>& s) {  // pool -> tensor, within its credits
        self->state.core->on_decoded(std::move(*s));
        pack();
      },
      // consumer -> tensor, after it took a batch from the hand-off: `done` is the previous
      // batch's buffers (or null), then its step before asking and how long it waited.
      [=](taken_atom, batch_ptr& done, double consumer_step_ms, double wait_ms) {
        auto& st = self->state;
        if (done && done.use_count() == 1 && st.spare.size() < st.spare_max) st.spare.push_back(std::move(done));
        if (consumer_step_ms > 0) st.consumer_step_ms = consumer_step_ms;
        ++st.metrics.batches;
        st.metrics.data_wait_ms_total += wait_ms;
        st.metrics.data_wait_ms_max = std::max(st.metrics.data_wait_ms_max, wait_ms);
        st.core->on_batch_taken();
        pack();  // a taken batch frees a queue slot: assemble what the buffers already hold
      },
      [=](fail_atom, const std::string& why) {
        if (self->state.failure.empty()) self->state.failure = why;
        self->state.handoff->fail(why);
      },
      [=](stats_atom, bool) { return std::make_shared<data_metrics>(self->state.metrics); },
  };
}

}  // namespace

struct actor_pipeline::impl {
  caf::actor_system& sys;
  pipeline_setup setup;
  order_slot slot;
  std::shared_ptr<const data::storage> store;
  std::shared_ptr<const source_list> sources;
  caf::actor reader, pool, tensor;
  std::shared_ptr<pixel_pool> pixels = std::make_shared<pixel_pool>();
  std::shared_ptr<const msomni::clock> clock = std::make_shared<real_clock>();  // consumer's and tensor stage's
  caf::scoped_actor scope;
  std::shared_ptr<batch_handoff> handoff;  // of the running stages
  batch_ptr current;                       // the batch next_batch returned last
  std::optional<model::micro_batch> current_packed;  // its model batch, until taken
  pipeline_position delivered;             // the position after it
  std::optional<time_point> last_taken;    // when next_batch returned it
  // What stage actors replaced in a reslot or restore had counted.
  uint64_t batches_before = 0, downgrades_before = 0;
  std::shared_ptr<std::atomic<uint64_t>> mismatched = std::make_shared<std::atomic<uint64_t>>(0);  // all stages'
  double wait_ms_before = 0, wait_ms_max_before = 0;
  bad_data_counts bad_before;
  impl(caf::actor_system& s, pipeline_setup p, order_slot o, std::shared_ptr<const data::storage> st)
      : sys(s), setup(std::move(p)), slot(o), store(std::move(st)), sources(index_sources(setup, *store)), scope(s) {
    attach_balance(setup, sources);
  }

  // Forwards its arguments into the request: a batch handed back must arrive as the only
  // reference, or the tensor actor cannot recycle its buffers (a copy kept here until the
  // answer came made every batch a fresh 2 MB allocation, zeroed, with page faults).
  template <class T, class... Ts>
  T ask(const caf::actor& who, Ts&&... xs) {
    T out{};
    std::string error;
    scope->request(who, caf::infinite, std::forward<Ts>(xs)...).receive([&](T& x) { out = std::move(x); },
                                                       [&](caf::error& e) { error = sys.render(e); });
    if (!error.empty()) throw std::runtime_error("data pipeline actor: " + error);
    return out;
  }

  // Spawns the stage actors for `slot` starting at `start` (validated before anything runs).
  void spawn(const pipeline_position& start) {
    slot.validate();
    if (slot.micro_batch != setup.shape.batch)
      throw std::invalid_argument("data pipeline: slot micro_batch " + std::to_string(slot.micro_batch) +
                                  " differs from the batch size " + std::to_string(setup.shape.batch));
    order_core plan = make_order(setup, slot);
    plan.restore(start.at, start.micro);
    auto reader_ptr = std::make_shared<own_reader>(std::move(plan), sample_fetcher(sources, store));
    handoff = std::make_shared<batch_handoff>(std::max<uint32_t>(1, setup.batch_queue));
    delivered = start;
    last_taken.reset();
    tensor = sys.spawn(tensor_actor, setup, slot, start, pixels, clock, handoff);
    pool = sys.spawn(pool_actor, setup, pixels, sources, store, tensor, mismatched);
    reader = sys.spawn(reader_actor, reader_ptr, setup.sources.size(), pool, tensor, setup.registry, setup.live);
    caf::anon_send(pool, wire_atom::value, reader);
    caf::anon_send(tensor, wire_atom::value, pool);
  }

  void stop() {
    for (auto* a : {&reader, &pool, &tensor}) caf::anon_send_exit(*a, caf::exit_reason::user_shutdown);
  }

  // Throws std::invalid_argument when `start` is not a position of these sources under `slot`.
  void check_start(const pipeline_position& start) const {
    std::vector<std::string> names;
    for (const auto& s : setup.sources) names.push_back(s.name);
    if (start.sources != names) throw std::invalid_argument("data pipeline state is for a different source list");
    make_order(setup, slot).restore(start.at, start.micro);
  }

  // New stage actors from `start`, keeping what the old ones counted.
  void replace_stages(const pipeline_position& start) {
    auto m = *ask<std::shared_ptr<data_metrics>>(tensor, stats_atom::value, true);
    const uint64_t downgrades = ask<uint64_t>(pool, stats_atom::value);
    const auto bad = handoff->bad();
    stop();
    batches_before += m.batches;
    wait_ms_before += m.data_wait_ms_total;
    wait_ms_max_before = std::max(wait_ms_max_before, m.data_wait_ms_max);
    downgrades_before += downgrades;
    bad_before.merge(bad);
    spawn(start);
  }
};

actor_pipeline::actor_pipeline(caf::actor_system& sys, pipeline_setup setup, order_slot slot,
                               std::shared_ptr<const storage> st, std::optional<std::vector<uint8_t>> state)
    : impl_(std::make_unique<impl>(sys, std::move(setup), slot, std::move(st))) {
  pipeline_position start;
  if (state) {
    start = decode_position(*state);
  } else {
    for (const auto& s : impl_->setup.sources) start.sources.push_back(s.name);
    start.at.mixer = make_mixer(impl_->setup).state();
    start.at.draws.assign(impl_->setup.sources.size(), 0);
  }
  impl_->check_start(start);  // throws before any actor runs
  impl_->spawn(start);
}

actor_pipeline::~actor_pipeline() { impl_->stop(); }

void actor_pipeline::visit_upcoming(size_t max, const std::function<void(const model::micro_batch&)>& visit) const {
  if (impl_->handoff) impl_->handoff->visit_waiting(max, visit);
}

const micro_batch& actor_pipeline::next_batch() {
  auto& d = *impl_;
  const time_point asked = d.clock->now();
  const double step_ms = d.last_taken ? std::chrono::duration<double, std::milli>(asked - *d.last_taken).count() : 0;
  handed_batch h = d.handoff->pop();  // throws with the pipeline's failure
  const time_point got = d.clock->now();
  d.last_taken = got;
  d.delivered = std::move(h.after);
  batch_ptr done = std::exchange(d.current, std::move(h.batch));
  d.current_packed.reset();
  if (h.packed) d.current_packed.emplace(std::move(*h.packed));  // construction keeps its memory
  // From the scoped actor, like every query after it: CAF keeps one sender's messages in order,
  // so a later metrics() counts this batch. `done` travels as its only reference (recycled).
  d.scope->send(d.tensor, taken_atom::value, std::move(done), step_ms,
                std::chrono::duration<double, std::milli>(got - asked).count());
  return *d.current;
}

model::micro_batch actor_pipeline::take_model_batch() {
  auto& d = *impl_;
  if (!d.current_packed)
    throw std::logic_error(d.setup.batch_memory ? "data pipeline: the model batch of this batch was already taken"
                                                : "data pipeline: no batch memory set, so no model batch is packed");
  model::micro_batch mb(std::move(*d.current_packed));
  d.current_packed.reset();
  return mb;
}

std::vector<uint8_t> actor_pipeline::save_state() { return encode_position(impl_->delivered); }

void actor_pipeline::reslot(const order_slot& slot) {
  const pipeline_position p = decode_position(save_state());
  if (p.micro != 0)
    throw std::logic_error("data pipeline: reslot " + std::to_string(p.micro) + " micro-batches into an optimizer step");
  slot.validate();
  impl_->slot = slot;
  impl_->replace_stages(p);
}

void actor_pipeline::restore_state(std::span<const uint8_t> bytes) {
  const pipeline_position p = decode_position(bytes);
  impl_->check_start(p);  // throws while the running stages are still intact
  impl_->replace_stages(p);
}

uint64_t actor_pipeline::downgrades() {
  return impl_->downgrades_before + impl_->ask<uint64_t>(impl_->pool, stats_atom::value);
}

bad_data_counts actor_pipeline::bad_data() {
  bad_data_counts out = impl_->bad_before;
  out.merge(impl_->handoff->bad());  // published by the tensor actor; no request on the training path
  return out;
}

data_metrics actor_pipeline::metrics() {
  auto m = *impl_->ask<std::shared_ptr<data_metrics>>(impl_->tensor, stats_atom::value, true);
  m.downgrades = downgrades();
  m.mismatched_name = impl_->mismatched->load(relaxed);
  m.batches += impl_->batches_before;
  m.data_wait_ms_total += impl_->wait_ms_before;
  m.data_wait_ms_max = std::max(m.data_wait_ms_max, impl_->wait_ms_max_before);
  return m;
}

}  // namespace msomni::data
