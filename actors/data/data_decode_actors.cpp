// The decode stage actors: the pool that dispatches raw samples within the tensor stage's
// credits, and its workers, each decoding with its own decoder (see data_stage_actors.hpp).
#include "data_stage_actors.hpp"

#include "mismatched_names.hpp"
#include "sample_repair.hpp"

#include "messages/catalog.hpp"  // the inspect overloads of the data messages these actors send
#include "metrics/accounted_actor.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace msomni::data::stage {
namespace {

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
  std::shared_ptr<live_data_metrics> live;
  std::shared_ptr<const msomni::clock> clock;
  uint32_t depth_total = 0;           // the reader stage's capacity, for the live gauges
};

using pool_actor_ptr = metrics::accounted_stateful_actor<pool_state>*;

void publish(pool_state& st) {
  auto& live = *st.live;
  live.reader.fill.store(st.core->queued(), relaxed);
  live.reader.capacity.store(st.depth_total, relaxed);
  live.decoder.credits.store(st.core->tensor_credits_total(), relaxed);
  live.count_downgrades(st.core->downgrades() - std::exchange(st.downgrades_published, st.core->downgrades()));
}

// Every sample the core lets go: text decoded here, the rest to the least loaded worker; then
// the reader's credits, batched.
void dispatch(pool_actor_ptr self) {
  auto& st = self->state;
  const auto& live = st.live;
  std::vector<msg::credit_grant> up;
  while (auto d = st.core->next_dispatch(up)) {
    if (!d->needs_worker) {
      const time_point t0 = live ? st.clock->now() : time_point{};
      auto out = std::make_shared<decoded_sample>(
          decode_or_replace(*st.inline_decoder, *st.inline_fetcher, d->sample, false, tensor_core::max_bad_run));
      if (live) live->count_decoded(out->kind, ms_since(*st.clock, t0));
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
  if (live) publish(st);
}

// A worker finished a sample: counted, passed on to the tensor stage, and the next dispatched.
void on_done(pool_actor_ptr self, uint32_t worker, const std::shared_ptr<decoded_sample>& out,
             std::atomic<uint64_t>& mismatched_total) {
  auto& st = self->state;
  --st.busy.at(worker);
  st.core->on_done(out->kind, out->decode_ms);
  if (st.live) st.live->count_decoded(out->kind, out->decode_ms);
  if (st.mismatched.note(*out)) {
    mismatched_total.fetch_add(1, relaxed);
    if (st.live) st.live->count_mismatched_name();
  }
  self->send(st.tensor, out);
  dispatch(self);
}

caf::behavior pool_actor(pool_actor_ptr self, pipeline_setup setup, std::shared_ptr<pixel_pool> pixels,
                         std::shared_ptr<const source_list> sources, std::shared_ptr<const storage> storage, caf::actor tensor,
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
  st.depth_total = std::accumulate(setup.depth.begin(), setup.depth.end(), 0u);
  st.live = setup.live;
  st.clock = std::make_shared<real_clock>();
  return {
      [=](wire_atom, caf::actor reader) {
        self->state.reader = reader;
        for (const auto& g : self->state.core->initial_reader_credits()) self->send(reader, g);
      },
      [=](const std::shared_ptr<std::vector<raw_sample>>& raws) {  // reader -> pool, within its credits
        for (auto& raw : *raws) self->state.core->on_raw(std::move(raw));
        dispatch(self);
      },
      [=](const msg::credit_grant& g) {  // tensor -> pool
        self->state.core->on_tensor_credit(g);
        dispatch(self);
      },
      [=](const msg::stage_pressure& p) { self->state.core->on_pressure(p); },  // latest wins
      [=](done_atom, uint32_t worker, const std::shared_ptr<decoded_sample>& out) {
        on_done(self, worker, out, *mismatched_total);
      },
      [=](stats_atom) { return self->state.core->downgrades(); },
  };
}

}  // namespace

caf::actor spawn_pool(caf::actor_system& sys, pipeline_setup setup, std::shared_ptr<pixel_pool> pixels,
                      std::shared_ptr<const source_list> sources, std::shared_ptr<const storage> storage,
                      caf::actor tensor, std::shared_ptr<std::atomic<uint64_t>> mismatched_total) {
  return sys.spawn(pool_actor, std::move(setup), std::move(pixels), std::move(sources), std::move(storage),
                   std::move(tensor), std::move(mismatched_total));
}

}  // namespace msomni::data::stage
