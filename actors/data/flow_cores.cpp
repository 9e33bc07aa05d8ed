// Credit accounting, decode dispatch with quotas and downgrade, and batch assembly in mixer
// order (see flow_cores.hpp for the protocol).
#include "flow_cores.hpp"

#include "core/log.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace msomni::data {

credit_batcher::credit_batcher(std::vector<uint32_t> min_grant) : min_grant_(std::move(min_grant)) {
  owed_.resize(min_grant_.size());
  for (uint32_t s = 0; s < owed_.size(); ++s) {
    if (min_grant_[s] == 0) throw std::invalid_argument("credit_batcher: min_grant of source " + std::to_string(s) + " is 0");
    owed_[s].source = s;
    owed_[s].credits = 0;
  }
}

void credit_batcher::add(const std::vector<msg::credit_grant>& grants) {
  for (const auto& g : grants) {
    auto& o = owed_.at(g.source);
    o.epoch = g.epoch;
    o.kind = g.kind;
    o.credits += g.credits;
  }
}

std::vector<msg::credit_grant> credit_batcher::take() {
  std::vector<msg::credit_grant> out;
  for (uint32_t s = 0; s < owed_.size(); ++s)
    if (owed_[s].credits >= min_grant_[s]) {
      out.push_back(owed_[s]);
      owed_[s].credits = 0;
    }
  return out;
}

std::vector<uint32_t> half_depths(const std::vector<uint32_t>& depth) {
  std::vector<uint32_t> out;
  for (auto d : depth) out.push_back(std::max<uint32_t>(1, d / 2));
  return out;
}

void reader_core::on_credit(const msg::credit_grant& g) { credits_.at(g.source) += g.credits; }

decode_pool_core::decode_pool_core(pool_limits limits) : limits_(std::move(limits)) {
  if (limits_.workers == 0 || limits_.per_worker == 0) throw std::invalid_argument("decode pool needs at least one worker slot");
  if (limits_.depth.size() != limits_.source_kinds.size()) throw std::invalid_argument("decode pool: depth per source");
  queues_.resize(limits_.source_kinds.size());
  tensor_credits_.assign(limits_.source_kinds.size(), 0);
  for (auto k : limits_.source_kinds) present_[size_t(k)] = true;
  recompute_quotas();
}

std::vector<msg::credit_grant> decode_pool_core::initial_reader_credits() const {
  std::vector<msg::credit_grant> out;
  for (uint32_t s = 0; s < limits_.depth.size(); ++s) out.push_back({0, limits_.source_kinds[s], limits_.depth[s], s});
  return out;
}

void decode_pool_core::on_raw(raw_sample s) {
  auto& q = queues_.at(s.pos.source);
  if (q.size() >= limits_.depth[s.pos.source]) throw std::logic_error("decode pool: reader sent past its credits for " + s.key);
  q.push_back(std::move(s));
}

void decode_pool_core::on_tensor_credit(const msg::credit_grant& g) { tensor_credits_.at(g.source) += g.credits; }

uint32_t decode_pool_core::queued() const {
  uint32_t n = 0;
  for (const auto& q : queues_) n += uint32_t(q.size());
  return n;
}

uint32_t decode_pool_core::tensor_credits_total() const { return std::accumulate(tensor_credits_.begin(), tensor_credits_.end(), 0u); }

uint32_t reader_core::credits_total() const { return std::accumulate(credits_.begin(), credits_.end(), 0u); }

// Quota of modality m: its share of the workers, by modality weight times the decode cost
// of its samples (balanced: a slow modality gets more workers so its rate holds). Every
// present modality keeps at least one worker, so none can starve.
void decode_pool_core::recompute_quotas() {
  std::array<double, modality_count> want{};
  double sum = 0;
  // Text is tokenized inline by the pool and never holds a worker, so it takes no share:
  // counting it (at its initial cost guess) left images one worker of two.
  auto uses_workers = [&](int m) { return present_[m] && modality(m) != modality::text; };
  for (int m = 0; m < modality_count; ++m) {
    if (!uses_workers(m)) continue;
    want[m] = std::max(1e-6, limits_.modality_weights[m]) * (limits_.adaptive_quotas ? cost_ms_[m] : 1.0);
    sum += want[m];
  }
  for (int m = 0; m < modality_count; ++m)
    quota_[m] = uses_workers(m) ? std::max<uint32_t>(1, uint32_t(std::lround(slots() * want[m] / sum))) : 0;
}

std::optional<dispatch> decode_pool_core::next_dispatch(std::vector<msg::credit_grant>& upstream) {
  for (size_t k = 0; k < queues_.size(); ++k) {
    const size_t s = (rr_ + k) % queues_.size();
    auto& q = queues_[s];
    if (q.empty() || tensor_credits_[s] == 0) continue;
    const raw_sample& head = q.front();
    const size_t m = size_t(head.kind);
    const bool needs_worker = head.kind != modality::text;
    if (needs_worker && (busy_total_ >= slots() || busy_[m] >= quota_[m])) continue;
    dispatch d{std::move(q.front()), false, needs_worker};
    q.pop_front();
    --tensor_credits_[s];
    rr_ = s + 1;
    upstream.push_back({0, d.sample.kind, 1, uint32_t(s)});
    if (needs_worker) {
      ++busy_[m];
      ++busy_total_;
    }
    if (needs_worker && d.sample.kind == modality::video && limits_.downgrade_video && downgrade_next_video()) {
      d.keyframe_only = true;
      ++downgrades_;
      MSOMNI_LOG(info, "data.decode") << "downgrade " << d.sample.key << " to keyframe-only: the tensor stage needs "
                                      << std::lround(share_ * 100) << "% of videos downgraded to keep up ("
                                      << downgrades_ << " so far)";
    }
    return d;
  }
  return std::nullopt;
}

void decode_pool_core::on_pressure(const msg::stage_pressure& p) {
  share_ = std::clamp(p.downgrade_share, 0.0, 1.0);
  if (share_ == 0) debt_ = 0;  // a later need starts afresh, not with an old remainder
}

bool decode_pool_core::downgrade_next_video() {
  if (share_ <= 0) return false;
  debt_ += share_;
  if (debt_ < 1.0 - 1e-9) return false;
  debt_ -= 1.0;
  return true;
}

void decode_pool_core::on_done(modality kind, double decode_ms) {
  const size_t m = size_t(kind);
  if (busy_[m] == 0 || busy_total_ == 0) throw std::logic_error("decode pool: on_done without a running decode");
  --busy_[m];
  --busy_total_;
  if (decode_ms > 0) {
    cost_ms_[m] = 0.9 * cost_ms_[m] + 0.1 * decode_ms;
    recompute_quotas();
  }
}

tensor_core::tensor_core(std::vector<std::string> names, std::vector<modality> kinds, std::vector<uint32_t> depth,
                         order_core order, uint32_t batch_queue_capacity)
    : names_(std::move(names)), kinds_(std::move(kinds)), depth_(std::move(depth)), order_(std::move(order)),
      batch_size_(uint32_t(order_.slot().micro_batch)), batch_queue_capacity_(std::max<uint32_t>(1, batch_queue_capacity)) {
  if (names_.size() != kinds_.size() || depth_.size() != kinds_.size() || order_.boundary().draws.size() != kinds_.size())
    throw std::invalid_argument("tensor stage: per-source sizes differ");
  buffers_.resize(kinds_.size());
  next_seq_.assign(kinds_.size(), 0);
  capacity_ = std::accumulate(depth_.begin(), depth_.end(), 0u);
  last_position_ = {names_, order_.boundary(), 0};
}

std::vector<msg::credit_grant> tensor_core::initial_credits() const {
  std::vector<msg::credit_grant> out;
  for (uint32_t s = 0; s < depth_.size(); ++s) out.push_back({0, kinds_[s], depth_[s], s});
  return out;
}

void tensor_core::on_decoded(decoded_sample s) {
  const uint32_t src = s.pos.source;
  if (s.pos.seq < next_seq_.at(src)) return;  // a duplicate from before a restore: already consumed
  if (s.decode_ms > 0 && !s.downgraded && !s.bad) {
    const size_t m = size_t(s.kind);
    full_decode_ms_[m] += (decode_seen_[m] ? 0.2 : 1.0) * (s.decode_ms - full_decode_ms_[m]);
    decode_seen_[m] = true;
  } else if (s.decode_ms > 0 && s.downgraded && !s.bad) {
    keyframe_decode_ms_ += (keyframe_seen_ ? 0.2 : 1.0) * (s.decode_ms - keyframe_decode_ms_);
    keyframe_seen_ = true;
  }
  if (s.kind == modality::video && !s.downgraded && !s.bad && s.unique_frames > 0) {
    video_frames_ += (video_frames_seen_ ? 0.2 : 1.0) * (double(s.unique_frames) - video_frames_);
    video_frames_seen_ = true;
  }
  buffers_[src].emplace(s.pos.seq, std::move(s));
  ++backlog_;
}

std::optional<std::vector<decoded_sample>> tensor_core::next_batch(std::vector<msg::credit_grant>& upstream,
                                                                   bad_data_counts& bad) {
  while (fill_slot(upstream, bad)) {
  }
  return take_batch();
}

std::optional<uint32_t> tensor_core::fill_slot(std::vector<msg::credit_grant>& upstream, bad_data_counts& bad) {
  if (ready_batches_ >= batch_queue_capacity_ || slots_.size() >= batch_size_) return std::nullopt;
  if (!pending_) pending_ = order_.next();
  const uint32_t src = pending_->source;
  auto it = buffers_[src].find(next_seq_[src]);
  if (it == buffers_[src].end()) return std::nullopt;  // the sample this slot needs is not here yet
  decoded_sample x = std::move(it->second);
  buffers_[src].erase(it);
  --backlog_;
  ++next_seq_[src];
  upstream.push_back({0, kinds_[src], 1, src});
  if (x.pos.draw != pending_->draw)
    throw std::logic_error("tensor stage: " + x.key + " is draw " + std::to_string(x.pos.draw) + " of " + names_[src] +
                           ", the order wants draw " + std::to_string(pending_->draw));
  for (const auto& [reason, shard] : x.shard_problems) {
    bad.add(reason, shard, "the shard as a whole (" + std::string(to_string(reason)) + ")");
    MSOMNI_LOG(warn, "data.tensor") << "shard " << shard << ": " << to_string(reason);
  }
  if (x.replaced) {
    bad.add(x.replaced_reason, x.replaced_key, x.replaced_cause);
    MSOMNI_LOG(warn, "data.tensor") << "skipped bad sample " << x.replaced_key << ": " << to_string(x.replaced_reason)
                                    << (x.replaced_cause.empty() ? "" : " (" + x.replaced_cause + ")") << "; its slot takes "
                                    << x.key;
  }
  if (!x.bad && !x.mismatched_as.empty()) bad.add_mismatched(x.key, x.mismatched_as);
  if (x.bad) {
    bad.add(x.reason, x.key, x.cause);
    throw std::runtime_error("data source '" + names_[src] + "': " + std::to_string(x.bad_run) +
                             " bad samples in a row (first " + x.key + ": " + to_string(x.reason) +
                             (x.cause.empty() ? "" : ", " + x.cause) + ")");
  }
  if (slots_.empty()) batch_global_ = pending_->place;
  pending_.reset();
  slots_.push_back(std::move(x));
  return uint32_t(slots_.size() - 1);
}

std::optional<std::vector<decoded_sample>> tensor_core::take_batch() {
  if (slots_.size() < batch_size_) return std::nullopt;
  ++ready_batches_;
  double decode_ms = 0;
  bool known = false;
  uint32_t videos = 0;
  for (const auto& x : slots_) {
    videos += x.kind == modality::video;
    if (decode_seen_[size_t(x.kind)]) decode_ms += full_decode_ms_[size_t(x.kind)], known = true;
  }
  videos_per_batch_ += (decode_timed_ ? 0.2 : 1.0) * (double(videos) - videos_per_batch_);
  if (known) {
    decode_ms /= decode_workers_;
    batch_decode_ms_ += (decode_timed_ ? 0.2 : 1.0) * (decode_ms - batch_decode_ms_);
    decode_timed_ = true;
  }
  last_batch_global_ = batch_global_;
  last_position_ = {names_, order_.boundary(), order_.micro_done()};
  return std::exchange(slots_, {});
}

void tensor_core::restore(const pipeline_position& p) {
  if (p.sources != names_) throw std::invalid_argument("data pipeline state is for a different source list");
  order_.restore(p.at, p.micro);
  last_position_ = p;
  for (auto& b : buffers_) b.clear();
  std::fill(next_seq_.begin(), next_seq_.end(), 0);
  slots_.clear();
  pending_.reset();
  ready_batches_ = 0;
  backlog_ = 0;
  share_ = 0;
  margin_ = 0;
}

void tensor_core::on_batch_timing(double pack_ms, uint32_t unique_frames, uint32_t full_frames, double pull_interval_ms) {
  if (unique_frames == 0 || pull_interval_ms <= 0) return;
  const double per_frame = pack_ms / unique_frames;
  const double a = timed_ ? 0.2 : 1.0;  // first sample seeds the averages
  ms_per_frame_ += a * (per_frame - ms_per_frame_);
  full_frames_ += a * (double(full_frames) - full_frames_);
  pull_interval_ms_ += a * (pull_interval_ms - pull_interval_ms_);
  timed_ = true;
}

msg::stage_pressure tensor_core::pressure(uint64_t epoch, uint32_t packed_waiting) {
  if (timed_) {
    const double needed = downgrade_share_needed();
    if (needed <= 0) margin_ = 0;
    share_ = needed > 0 ? std::min(1.0, needed + margin_) : 0.0;
  }
  return {epoch, backlog_, capacity_, packed_waiting, share_};
}

void tensor_core::on_consumer_wait(double step_ms, double wait_ms) {
  if (step_ms < 0 || wait_ms < 0 || step_ms + wait_ms <= 0) return;
  const double cycle = step_ms + wait_ms;
  cycle_ms_ += (cycle_seen_ ? 0.1 : 1.0) * (cycle - cycle_ms_);
  cycle_seen_ = true;
  if (share_ <= 0) return;
  // Weighed by time: one long wait counts for what it costs, not as one batch of many.
  const double excess = (wait_ms - target_wait_share * cycle) / cycle_ms_;
  margin_ = std::clamp(margin_ + margin_gain * excess, 0.0, 1.0);
}

// What each downgraded video saves, against how far each full-quality estimate exceeds its
// part of the step; a saving not yet known counts as all of a video's cost (decoding) or all
// but one of its frames (packing), until downgraded videos have been measured.
double tensor_core::downgrade_share_needed() const {
  const double budget = pull_interval_ms_;
  if (videos_per_batch_ <= 0) return 0;
  double share = 0;
  const double pack_ms = ms_per_frame_ * full_frames_;
  if (pack_ms > budget) {
    const double frames_saved = video_frames_seen_ ? std::max(0.0, video_frames_ - 1) : 0;
    const double saving = videos_per_batch_ * frames_saved * ms_per_frame_;
    share = saving > 0 ? (pack_ms - budget) / saving : 1.0;
  }
  const size_t v = size_t(modality::video);
  if (decode_timed_ && decode_seen_[v] && batch_decode_ms_ > budget) {
    const double per_video = full_decode_ms_[v] - (keyframe_seen_ ? keyframe_decode_ms_ : 0.0);
    const double saving = videos_per_batch_ * std::max(0.0, per_video) / decode_workers_;
    share = std::max(share, saving > 0 ? (batch_decode_ms_ - budget) / saving : 1.0);
  }
  return std::clamp(share, 0.0, 1.0);
}

}  // namespace msomni::data
