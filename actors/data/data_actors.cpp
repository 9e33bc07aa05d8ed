// actor_pipeline: the data stage actors (data_stage_actors.hpp) spawned, wired, replaced at a
// reslot or restore, and asked for their batches and counts (see data_actors.hpp).
#include "data_actors.hpp"

#include "data_stage_actors.hpp"
#include "pipeline_state.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>

namespace msomni::data {

using namespace stage;

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
    tensor = spawn_tensor(sys, setup, slot, start, pixels, clock, handoff);
    pool = spawn_pool(sys, setup, pixels, sources, store, tensor, mismatched);
    reader = spawn_reader(sys, reader_ptr, setup.sources.size(), pool, tensor, setup.registry, setup.live);
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
