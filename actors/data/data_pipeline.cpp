// Config -> pipeline limits, and the in-thread driver of the three stage cores.
#include "data_pipeline.hpp"

#include "draw_costs.hpp"

#include "config/job_config.hpp"
#include "pipeline_state.hpp"
#include "remote_io.hpp"
#include "remote_storage.hpp"
#include "sample_repair.hpp"
#include "tensorizer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace msomni::data {
namespace {

template <class F>
std::vector<std::invoke_result_t<F, const source_spec&>> per_source(const pipeline_setup& s, F f) {
  std::vector<std::invoke_result_t<F, const source_spec&>> out;
  for (const auto& src : s.sources) out.push_back(f(src));
  return out;
}

double ms_between(time_point a, time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

}  // namespace

mixer_core make_mixer(const pipeline_setup& s) {
  std::vector<double> w;
  for (const auto& src : s.sources) w.push_back(src.weight);
  return mixer_core(w, s.mix, s.seed);
}

void attach_balance(pipeline_setup& setup, const std::shared_ptr<const source_list>& sources) {
  if (setup.balance_steps) setup.balance = balance_by(std::make_shared<const draw_costs>(sources, setup.shape, setup.cost));
}

order_core make_order(const pipeline_setup& setup, const order_slot& slot) {
  return order_core(make_mixer(setup), slot, setup.balance);
}

decode_options decode_options_of(const pipeline_setup& setup) {
  return {int(setup.shape.image_size), int(setup.shape.video_frames), size_t(setup.shape.max_tokens()),
          setup.max_image_pixels, setup.max_video_pixels};
}

std::shared_ptr<const source_list> index_sources(const pipeline_setup& setup, const storage& st) {
  auto out = std::make_shared<source_list>();
  watch_remote_io(setup.registry);  // remote sources' requests, retries and cache, when metrics are on
  for (uint32_t i = 0; i < setup.sources.size(); ++i) out->emplace_back(i, setup.sources[i], setup.seed, setup.shuffle, st);
  return out;
}

pipeline_setup make_pipeline_setup(const config::job_config& cfg) {
  pipeline_setup s;
  if (cfg.data.sources.empty()) throw std::invalid_argument("data: no [[data.sources]] configured");
  set_remote_io(remote_io_of(cfg));  // how this process reads s3:// and http(s):// sources
  double total = 0;
  for (const auto& d : cfg.data.sources) {
    if (d.uri.rfind("synthetic://", 0) == 0)
      throw std::invalid_argument("data source '" + d.name + "': synthetic:// uris are not shards; generate some with msomni-gen-dataset");
    s.sources.push_back({d.name.empty() ? d.uri : d.name, d.uri, d.kind, d.weight, uint64_t(cfg.io.max_sample_bytes)});
    total += d.weight;
  }
  s.max_image_pixels = uint64_t(cfg.io.max_image_pixels);
  s.max_video_pixels = uint64_t(cfg.io.max_video_pixels);
  s.shape = {cfg.training.micro_batch, cfg.model.image_size, cfg.model.patch_size, cfg.model.video_frames, cfg.model.max_seq_len};
  s.shape.validate();
  s.mix = parse_mix_strategy(cfg.data.mix_strategy);
  s.balance_steps = cfg.data.balance == "steps";
  s.cost = transformer_cost_weights(cfg.model.d_model, cfg.model.d_ff);
  s.shuffle = cfg.data.shuffle;
  s.seed = uint64_t(cfg.training.seed);
  std::array<double, modality_count> mw{1, 1, 1};
  double mean = 0;
  for (int m = 0; m < modality_count; ++m) {
    auto it = cfg.io.modality_weights.find(to_string(modality(m)));
    if (it != cfg.io.modality_weights.end()) mw[m] = it->second;
    mean += mw[m] / modality_count;
  }
  for (const auto& src : s.sources) {
    const double want = double(cfg.io.prefetch_depth) * double(cfg.training.micro_batch) * (src.weight / total) *
                        (mean > 0 ? mw[size_t(src.kind)] / mean : 1.0);
    s.depth.push_back(uint32_t(std::clamp<double>(std::ceil(want), 2.0, double(cfg.io.queue_capacity))));
  }
  s.pool.source_kinds = per_source(s, [](const source_spec& x) { return x.kind; });
  s.pool.depth = s.depth;
  s.pool.modality_weights = mw;
  s.pool.workers = uint32_t(cfg.io.decode_workers);
  s.pool.downgrade_video = cfg.io.downgrade_video;
  s.pool.adaptive_quotas = s.mix == mix_strategy::balanced_by_weight;
  s.batch_queue = uint32_t(std::max<int64_t>(1, cfg.io.prefetch_depth));
  s.max_data_wait_ms = cfg.io.max_data_wait_ms;
  return s;
}

data_pipeline::data_pipeline(pipeline_setup setup, order_slot slot, std::shared_ptr<const storage> st, const clock* clk)
    : setup_(std::move(setup)), slot_(slot), storage_(std::move(st)),
      own_clock_(clk ? nullptr : std::make_unique<real_clock>()), clock_(clk ? clk : own_clock_.get()),
      started_(clock_->now()),
      sources_(index_sources(setup_, *storage_)),
      reader_core_(setup_.sources.size()),
      pool_(setup_.pool),
      decoder_(decode_options_of(setup_), pixels_),
      repair_(sources_, storage_) {
  attach_balance(setup_, sources_);
  pipeline_position start;
  for (const auto& s : setup_.sources) start.sources.push_back(s.name);
  start.at.mixer = make_mixer(setup_).state();
  start.at.draws.assign(setup_.sources.size(), 0);
  start_at(start, slot);
  metrics_.tensor.queue_capacity = setup_.batch_queue;
  metrics_.decoder.queue_capacity = std::accumulate(setup_.depth.begin(), setup_.depth.end(), 0u);
  metrics_.reader.queue_capacity = metrics_.decoder.queue_capacity;
}

data_pipeline::~data_pipeline() = default;

// Everything in flight belongs to the old position or slot: rebuild the stages and credits.
void data_pipeline::start_at(const pipeline_position& p, const order_slot& slot) {
  slot.validate();
  if (slot.micro_batch != setup_.shape.batch)
    throw std::invalid_argument("data pipeline: slot micro_batch " + std::to_string(slot.micro_batch) +
                                " differs from the batch size " + std::to_string(setup_.shape.batch));
  std::vector<std::string> names;
  for (const auto& s : setup_.sources) names.push_back(s.name);
  auto tensor = std::make_unique<tensor_core>(names, setup_.pool.source_kinds, setup_.depth, make_order(setup_, slot),
                                              setup_.batch_queue);
  tensor->restore(p);  // validates the position against this slot
  order_core plan = make_order(setup_, slot);
  plan.restore(p.at, p.micro);
  reader_ = std::make_unique<own_reader>(std::move(plan), sample_fetcher(sources_, storage_));
  tensor_ = std::move(tensor);
  slot_ = slot;
  reader_core_ = reader_core(setup_.sources.size());
  pool_ = decode_pool_core(setup_.pool);
  for (const auto& g : pool_.initial_reader_credits()) reader_core_.on_credit(g);
  for (const auto& g : tensor_->initial_credits()) pool_.on_tensor_credit(g);
}

bool data_pipeline::step() {
  bool moved = false;
  const uint64_t downgrades_before = pool_.downgrades();
  while (auto s = reader_core_.next_read([this](uint32_t x) { return reader_->ready(x); })) {
    raw_sample raw = reader_->next(*s);
    ++metrics_.reader.items;
    pool_.on_raw(std::move(raw));
    moved = true;
  }
  std::vector<msg::credit_grant> upstream;
  while (auto d = pool_.next_dispatch(upstream)) {
    const time_point t0 = clock_->now();
    decoded_sample out = decode_or_replace(decoder_, repair_, d->sample, d->keyframe_only, tensor_core::max_bad_run);
    const double ms = ms_between(t0, clock_->now());
    const size_t m = size_t(out.kind);
    if (d->sample.kind == modality::video && d->needs_worker) ++metrics_.videos;
    if (d->needs_worker) {
      pool_.on_done(d->sample.kind, ms);
      ++metrics_.decoded[m];
      metrics_.decode_ms[m] += ms;
    }
    ++metrics_.decoder.items;
    if (setup_.live) setup_.live->count_decoded(out.kind, ms);
    if (mismatched_.note(out) && setup_.live) setup_.live->count_mismatched_name();
    metrics_.mismatched_name = mismatched_.count();
    tensor_->on_decoded(std::move(out));
    moved = true;
  }
  for (const auto& g : upstream) reader_core_.on_credit(g);
  metrics_.downgrades = pool_.downgrades();
  if (setup_.live) setup_.live->count_downgrades(pool_.downgrades() - downgrades_before);
  return moved;
}

micro_batch data_pipeline::next_batch() {
  const time_point t0 = clock_->now();
  const auto bad_before = bad_.count;
  while (true) {
    std::vector<msg::credit_grant> upstream;
    auto samples = tensor_->next_batch(upstream, bad_);
    for (const auto& g : upstream) pool_.on_tensor_credit(g);
    if (samples) {
      micro_batch b = pack_micro_batch(setup_.shape, *samples);
      for (auto& x : *samples) pixels_->give(std::move(x.pixels));  // back to the decoder
      tensor_->on_batch_taken();  // handed straight to the caller
      b.index = tensor_->last_batch_global() / uint64_t(slot_.micro_batch);
      ++metrics_.batches;
      ++metrics_.tensor.items;
      const time_point t1 = clock_->now();
      const double wait = ms_between(t0, t1);
      metrics_.data_wait_ms_total += wait;
      metrics_.data_wait_ms_max = std::max(metrics_.data_wait_ms_max, wait);
      const double secs = std::max(1e-9, ms_between(started_, t1) / 1000.0);
      for (auto* g : {&metrics_.reader, &metrics_.decoder, &metrics_.tensor}) g->items_per_s = double(g->items) / secs;
      metrics_.decoder.queue_fill = pool_.queued();
      metrics_.tensor.queue_fill = tensor_->backlog();
      if (setup_.live) publish_live(bad_before);
      return b;
    }
    // Grants from the tensor stage may let the pool start decodes; a round that moves
    // nothing while a batch is still incomplete would be a credit bug, not slow data.
    if (!step() && upstream.empty()) throw std::logic_error("data pipeline stalled: no stage can make progress");
  }
}

// Once per batch, in the training thread that drives the stages: the batch went straight to
// the caller, so the tensor stage holds none.
void data_pipeline::publish_live(const live_data_metrics::bad_counts& bad_before) {
  auto& live = *setup_.live;
  live.reader.set(pool_.queued(), metrics_.reader.queue_capacity, reader_core_.credits_total());
  live.decoder.set(tensor_->backlog(), tensor_->capacity(), pool_.tensor_credits_total());
  live.tensor.set(0, std::max<uint32_t>(1, setup_.batch_queue), std::max<uint32_t>(1, setup_.batch_queue));
  live.count_bad(bad_before, bad_.count);
}

std::vector<uint8_t> data_pipeline::save_state() const { return encode_position(tensor_->position_after_last_batch()); }

void data_pipeline::restore_state(std::span<const uint8_t> bytes) { start_at(decode_position(bytes), slot_); }

void data_pipeline::reslot(const order_slot& slot) {
  const pipeline_position p = position();
  if (p.micro != 0)
    throw std::logic_error("data pipeline: reslot " + std::to_string(p.micro) + " micro-batches into an optimizer step");
  start_at(p, slot);
}

std::vector<msg::source_cursor> data_pipeline::cursors() const {
  std::vector<msg::source_cursor> out;
  const pipeline_position p = position();
  for (size_t i = 0; i < sources_->size(); ++i) out.push_back((*sources_)[i].cursor_at(p.at.draws[i]));
  return out;
}

}  // namespace msomni::data
