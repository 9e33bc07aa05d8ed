// rank_trainer (see rank_trainer.hpp).
#include "rank_trainer.hpp"

#include "batch_cost_model.hpp"

#include "config/job_config.hpp"
#include "core/rng.hpp"
#include "memory_features.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace msomni::rank_worker {

trainer_settings settings_from(const config::job_config& cfg) {
  trainer_settings s;
  s.grad_accum = cfg.training.grad_accum;
  s.warmup_steps = cfg.training.warmup_steps;
  s.optimizer.lr = cfg.training.lr;
  s.optimizer.weight_decay = cfg.training.weight_decay;
  s.optimizer.grad_clip = cfg.training.grad_clip;
  s.patches_per_frame = (cfg.model.image_size / std::max<int64_t>(1, cfg.model.patch_size)) *
                        (cfg.model.image_size / std::max<int64_t>(1, cfg.model.patch_size));
  return s;
}

rank_trainer::rank_trainer(model::trainable_model& m, transport::communicator& comm, batch_source& data,
                           const clock& clk, trainer_settings settings)
    : model_(m), comm_(&comm), data_(&data), clock_(clk), settings_(settings) {}

double rank_trainer::lr_at(uint64_t step) const {
  if (settings_.warmup_steps <= 0 || static_cast<int64_t>(step) >= settings_.warmup_steps)
    return settings_.optimizer.lr;
  return settings_.optimizer.lr * static_cast<double>(step + 1) / static_cast<double>(settings_.warmup_steps);
}

msg::step_record rank_trainer::step(uint64_t announce) {
  const auto start = clock_.now();
  model_.zero_gradients();
  const uint64_t downgraded_before = data_->downgraded_total();
  // The counts the last step ended with: a sample the data stages count between two steps
  // (packing ahead) belongs to the next step's count, never to none.
  const auto bad_before = bad_counted_;
  const float scale = 1.0f / static_cast<float>(settings_.grad_accum);
  last_batch_ = {};
  last_fit_.reset();
  take_fit_target();
  const auto totals = run_micro_batches(scale);
  all_reduce_gradients();
  auto stats = own_statistics(announce, totals, downgraded_before, bad_before);
  comm_->all_reduce(stats.values, transport::reduce_op::sum);
  announced_ = static_cast<uint64_t>(stats.values[stat_announce]);

  auto opt = settings_.optimizer;
  opt.lr = lr_at(step_);
  opt.gradient_scale = 1.0 / comm_->size();
  const auto rep = model_.optimizer_step(opt);
  ++step_;

  const auto elapsed = clock_.now() - start;
  return record_of(stats, rep, elapsed, totals);
}

void rank_trainer::take_fit_target() {
  if (fit_source_)
    if (auto target = fit_source_(step_ + 1)) {
      step_fit f;
      f.target = *target;
      f.allow_bytes = activation_allowance(f.target, activations());
      f.cut_allow_bytes = cut_allowance(f.target, activations());
      last_fit_ = std::move(f);
    }
}

rank_trainer::micro_batch_totals rank_trainer::run_micro_batches(float scale) {
  micro_batch_totals t;
  for (int64_t k = 0; k < settings_.grad_accum; ++k) {
    const auto before = clock_.now();
    const auto batch = data_->next();
    t.data_wait += clock_.now() - before;
    auto run = [&](const model::micro_batch& mb, float s) {
      // The step's features are those of what ran: a fitted micro-batch counts as its parts,
      // so the memory sample's peak and its features agree, and the predictor learns what an
      // unsplit batch of the pipeline costs instead of the split one's lower peak.
      add_micro_batch(last_batch_, features_of(mb));
      const auto compute_from = clock_.now();
      const auto rep = model_.forward_backward(mb, s);
      const auto spent = clock_.now() - compute_from;
      t.compute += spent;
      cost_model_.observe(cost_features_of(mb), std::chrono::duration<double, std::milli>(spent).count());
      t.loss_sum += rep.loss * static_cast<double>(rep.target_tokens);
      t.targets += static_cast<double>(rep.target_tokens);
      t.inputs += static_cast<double>(rep.input_tokens);
    };
    if (!last_fit_) {
      run(batch, scale);
      continue;
    }
    run_fitted(batch, scale, run);
  }
  return t;
}

void rank_trainer::all_reduce_gradients() {
  // Gradients: a sum over ranks, scaled by 1/W inside the optimizer.
  auto grads = model_.gradient_data();
  const auto allreduce_from = clock_.now();
  if (model_.storage() == model::storage_kind::host) {
    comm_->all_reduce(grads, transport::reduce_op::sum);
  } else if (gradient_comm_) {
    if (gradient_comm_->epoch() != comm_->epoch() || gradient_comm_->size() != comm_->size())
      throw std::logic_error("rank_trainer: the gradient communicator is of epoch " + std::to_string(gradient_comm_->epoch()) +
                             ", the ring of epoch " + std::to_string(comm_->epoch()));
    gradient_comm_->all_reduce(grads, transport::reduce_op::sum);  // device memory, in place
  } else {
    host_grads_.resize(grads.size());
    model_.copy_to_host(model::buffer_role::gradients, host_grads_);
    comm_->all_reduce(host_grads_, transport::reduce_op::sum);
    model_.copy_from_host(model::buffer_role::gradients, host_grads_);
  }
  last_allreduce_ = {clock_.now() - allreduce_from, grads.size() * sizeof(float)};
}

rank_trainer::step_statistics rank_trainer::own_statistics(uint64_t announce, const micro_batch_totals& totals,
                                                           uint64_t downgraded_before,
                                                           const std::vector<msg::bad_sample_count>& bad_before) {
  // Epochs are small integers, exact in a float (below 2^24); only rank 0 adds one.
  const auto downgraded = static_cast<float>(data_->downgraded_total() - downgraded_before);
  // Good samples decoded by bytes unlike their names, this step, are the sixth statistic; bad
  // samples of this step per reason follow (every rank of a job has the same kind of data
  // source, so the same reasons in the same order). Counts and listing are one snapshot, so
  // the samples named agree with the counts summed.
  last_listing_ = data_->bad_samples_listed();
  const auto bad_after = last_listing_.totals;
  bad_counted_ = bad_after;
  const uint64_t mismatched_after = last_listing_.mismatched;
  const auto mismatched = static_cast<float>(mismatched_after - std::min(mismatched_after, mismatched_before_));
  mismatched_before_ = mismatched_after;
  step_statistics s;
  s.values = {static_cast<float>(totals.loss_sum), static_cast<float>(totals.targets), static_cast<float>(totals.inputs),
              static_cast<float>(announce), downgraded, mismatched};
  for (size_t i = 0; i < bad_after.size(); ++i)
    s.values.push_back(static_cast<float>(bad_after[i].count - (i < bad_before.size() ? bad_before[i].count : 0)));
  // Then one slot per rank, each rank's own compute ms in its slot: after the sum every rank
  // knows every rank's compute time, so the step's imbalance.
  s.compute_from = s.values.size();
  s.values.resize(s.compute_from + size_t(comm_->size()), 0.0f);
  s.values[s.compute_from + size_t(comm_->rank())] =
      static_cast<float>(std::chrono::duration<double, std::milli>(totals.compute).count());
  return s;
}

msg::step_record rank_trainer::record_of(const step_statistics& stats, const model::optimizer_report& rep, nanos elapsed,
                                         const micro_batch_totals& totals) {
  const auto& v = stats.values;
  const auto& bad_after = bad_counted_;  // the counts own_statistics took for this step
  msg::step_record r;
  r.step = step_;
  r.world_size = static_cast<uint32_t>(comm_->size());
  r.loss = v[stat_targets] > 0 ? static_cast<double>(v[stat_loss]) / static_cast<double>(v[stat_targets]) : 0.0;
  r.step_time_ns = elapsed.count();
  r.tokens_per_s = elapsed.count() > 0 ? static_cast<double>(v[stat_inputs]) * 1e9 / static_cast<double>(elapsed.count()) : 0;
  own_tokens_per_s_ = elapsed.count() > 0 ? totals.inputs * 1e9 / static_cast<double>(elapsed.count()) : 0;
  r.data_wait_ns = totals.data_wait.count();
  r.downgraded_samples = static_cast<uint64_t>(v[stat_downgraded]);  // all ranks, this step
  r.mismatched_names = static_cast<uint64_t>(v[stat_mismatched]);
  for (size_t i = 0; i < bad_after.size(); ++i)
    if (const auto n = static_cast<uint64_t>(v[stat_bad_from + i]); n > 0) r.bad_samples.push_back({bad_after[i].reason, n});
  double compute_max = 0, compute_sum = 0;
  for (size_t i = stats.compute_from; i < v.size(); ++i) {
    compute_max = std::max(compute_max, static_cast<double>(v[i]));
    compute_sum += static_cast<double>(v[i]);
  }
  r.compute_ms_max = compute_max;
  r.compute_ms_mean = compute_sum / static_cast<double>(comm_->size());
  own_compute_ms_ = static_cast<double>(v[stats.compute_from + size_t(comm_->rank())]);
  r.grad_norm = rep.grad_norm;
  r.optimizer_skipped = rep.skipped;
  r.loss_kind = msg::kind_of(r.loss);
  r.grad_norm_kind = msg::kind_of(r.grad_norm);
  r.epoch = comm_->epoch();
  last_step_finite_ = std::isfinite(r.loss) && std::isfinite(r.grad_norm) && !rep.skipped;
  return r;
}

std::vector<msg::bad_sample_seen> rank_trainer::take_bad_samples_seen() {
  std::vector<msg::bad_sample_seen> out;
  for (auto s : last_listing_.samples) {
    uint64_t& reported = seen_reported_[s.key];
    if (s.draws <= reported) continue;
    const uint64_t more = s.draws - reported;
    reported = s.draws;
    s.draws = more;
    out.push_back(std::move(s));
  }
  return out;
}

activation_bytes_fn rank_trainer::activations() const {
  return [&m = model_](int64_t rows, int64_t seq_len) { return m.estimate_memory(rows, seq_len).activation_bytes; };
}

void rank_trainer::run_fitted(const model::micro_batch& batch, float scale,
                              const std::function<void(const model::micro_batch&, float)>& run) {
  auto& f = *last_fit_;
  const auto plan = plan_fit(batch, f.allow_bytes, f.cut_allow_bytes, activations(), settings_.patches_per_frame);
  if (!plan.fits) f.fits = false;
  if (!plan.changed()) {
    ++f.parts;
    run(batch, scale);
    return;
  }
  ++f.micro_batches_split;
  f.parts += static_cast<uint32_t>(plan.parts.size());
  f.keyframe_cuts += static_cast<uint32_t>(plan.keyframe_cuts.size());
  if (f.detail.empty()) f.detail = describe(plan);
  // Each part's gradient weighs as its share of the micro-batch's loss targets, so together
  // they are the micro-batch's mean-loss gradient.
  const auto whole = static_cast<double>(batch.target_tokens());
  for (const auto& part : split_micro_batch(batch, plan, batch.patches.get_allocator().resource())) {
    const auto share = whole > 0 ? static_cast<double>(part.target_tokens()) / whole : 0.0;
    run(part, static_cast<float>(static_cast<double>(scale) * share));
  }
}

model::model_state rank_trainer::save_state() const {
  auto s = model_.save_state();
  s.put_int64("trainer/step", static_cast<int64_t>(step_));
  s.blobs.push_back({"data/position", data_->save_state()});
  return s;
}

bool rank_trainer::load_state(const model::model_state& s) {
  const auto* step = s.find_blob("trainer/step");
  const auto* data = s.find_blob("data/position");
  if (!step || step->bytes.size() != sizeof(int64_t))
    throw std::invalid_argument("rank_trainer: state lacks trainer/step");
  model_.load_state(s);
  int64_t v = 0;
  std::memcpy(&v, step->bytes.data(), sizeof v);
  step_ = static_cast<uint64_t>(v);
  if (!data) return false;
  try {
    data_->restore_state(data->bytes);
  } catch (const std::invalid_argument&) {
    return false;  // e.g. a data state of an older format: the caller restarts the data order
  }
  return true;
}

void rank_trainer::sync_state(transport::communicator& comm, int root) {
  auto s = save_state();
  // Same model on every member, so tensor names and sizes agree; blobs (data position) may
  // differ in size, so their lengths travel first. Four broadcasts in all.
  std::vector<uint64_t> sizes{s.tensors.size(), s.blobs.size()};
  for (const auto& t : s.tensors) sizes.push_back(t.values.size());
  for (const auto& b : s.blobs) sizes.push_back(b.bytes.size());
  uint64_t count = sizes.size();
  comm.broadcast(std::as_writable_bytes(std::span<uint64_t>(&count, 1)), root);
  if (count != sizes.size())
    throw std::runtime_error("sync_state: the root's state has a different layout (" + std::to_string(count) +
                             " size fields, here " + std::to_string(sizes.size()) + ")");
  std::vector<uint64_t> root_sizes = sizes;
  comm.broadcast(std::as_writable_bytes(std::span<uint64_t>(root_sizes)), root);
  for (size_t i = 0; i < 2 + s.tensors.size(); ++i)
    if (root_sizes[i] != sizes[i]) throw std::runtime_error("sync_state: the root's tensors differ from this rank's");
  std::vector<float> flat;
  std::vector<uint8_t> bytes;
  if (comm.rank() == root) {
    for (const auto& t : s.tensors) flat.insert(flat.end(), t.values.begin(), t.values.end());
    for (const auto& b : s.blobs) bytes.insert(bytes.end(), b.bytes.begin(), b.bytes.end());
  } else {
    size_t nf = 0, nb = 0;
    for (size_t i = 0; i < s.tensors.size(); ++i) nf += root_sizes[2 + i];
    for (size_t i = 0; i < s.blobs.size(); ++i) nb += root_sizes[2 + s.tensors.size() + i];
    flat.resize(nf);
    bytes.resize(nb);
  }
  comm.broadcast(std::as_writable_bytes(std::span<float>(flat)), root);
  comm.broadcast(std::as_writable_bytes(std::span<uint8_t>(bytes)), root);
  if (comm.rank() == root) return;
  size_t off = 0;
  for (auto& t : s.tensors) {
    std::copy(flat.begin() + static_cast<std::ptrdiff_t>(off), flat.begin() + static_cast<std::ptrdiff_t>(off + t.values.size()),
              t.values.begin());
    off += t.values.size();
  }
  off = 0;
  for (size_t i = 0; i < s.blobs.size(); ++i) {
    const size_t n = root_sizes[2 + s.tensors.size() + i];
    s.blobs[i].bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(off), bytes.begin() + static_cast<std::ptrdiff_t>(off + n));
    off += n;
  }
  load_state(s);
}

uint64_t rank_trainer::parameter_checksum() const {
  std::vector<float> host(static_cast<size_t>(model_.parameter_count()));
  model_.copy_to_host(model::buffer_role::parameters, host);
  return stable_hash({reinterpret_cast<const char*>(host.data()), host.size() * sizeof(float)});
}

}  // namespace msomni::rank_worker
