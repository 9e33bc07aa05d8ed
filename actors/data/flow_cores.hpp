// Policy cores of the three stages' flow control. No threads, files or clocks: drivers (the
// in-thread data_pipeline, the CAF actor shells, the simulation tests) feed them events and
// carry out what they return.
//
//   reader --raw--> decode pool --decoded--> tensor stage --micro_batch--> rank worker
//          <-credit-            <-credit------              <-pull----------
//                               <-stage_pressure-
//
// Credits are per source. The decode pool grants the reader one credit per raw sample that
// leaves its queue; the tensor stage grants the pool one per sample it consumes, and the pool
// starts a decode only while it holds one (so every decoded sample has a slot). Dispatch is
// in sequence order within a source, which with per-source credits rules out deadlock: the
// sample the global order waits for is always queued, decoding, or first in line for a credit.
// Which samples, in which order: global_order.hpp (the same order_core runs in the reader,
// which reads this rank's draws, and in the tensor stage, which fills slots in that order).
// Downgrade: while the tensor stage says it is saturated, video is decoded keyframe-only.
#pragma once

#include "core/modality.hpp"
#include "global_order.hpp"
#include "messages/data_messages.hpp"
#include "sample.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace msomni::data {

// Credit grants held back until a source owes at least its `min_grant` (the drivers use half
// the source's depth), then sent summed: one message carries many credits, so two stages
// exchange a few messages per batch instead of one per sample (each message also wakes an
// actor, and at 2 workers often a sleeping thread). It cannot stall a source: the credits of
// a source add up to its depth (held upstream + in flight + queued downstream + owed here), so
// a downstream queue that runs dry with nothing in flight leaves all of them owed here, and
// min_grant <= depth. The upstream keeps depth - min_grant credits of cushion meanwhile.
class credit_batcher {
 public:
  explicit credit_batcher(std::vector<uint32_t> min_grant);
  void add(const std::vector<msg::credit_grant>& grants);
  // The grants of sources owing at least their min_grant, one per source; they are no longer owed.
  std::vector<msg::credit_grant> take();
  uint32_t owed(uint32_t source) const { return owed_.at(source).credits; }

 private:
  std::vector<uint32_t> min_grant_;
  std::vector<msg::credit_grant> owed_;  // per source
};
// Half of each depth, at least 1: the min_grant the actor shells use.
std::vector<uint32_t> half_depths(const std::vector<uint32_t>& depth);

class reader_core {
 public:
  explicit reader_core(size_t sources) : credits_(sources, 0) {}
  void on_credit(const msg::credit_grant& g);
  // The source to read one sample from now (taking its credit), round-robin among those with
  // a credit for which `ready(source)` says there is something to read; none = wait.
  template <class Ready>
  std::optional<uint32_t> next_read(Ready&& ready) {
    for (size_t k = 0; k < credits_.size(); ++k) {
      const size_t s = (next_ + k) % credits_.size();
      if (credits_[s] > 0 && ready(uint32_t(s))) {
        --credits_[s];
        next_ = s + 1;
        return uint32_t(s);
      }
    }
    return std::nullopt;
  }
  uint32_t credits(uint32_t source) const { return credits_.at(source); }
  uint32_t credits_total() const;

 private:
  std::vector<uint32_t> credits_;
  size_t next_ = 0;
};

struct pool_limits {
  std::vector<modality> source_kinds;
  std::vector<uint32_t> depth;                  // raw queue slots per source
  std::array<double, modality_count> modality_weights{1, 1, 1};
  uint32_t workers = 2;
  bool downgrade_video = true;
  bool adaptive_quotas = true;                  // balanced_by_weight: quotas follow decode cost
  // Samples a worker may hold at once (its mailbox): 2 hides the round trip from a finished
  // decode to the next dispatch, which otherwise idles every worker once per sample.
  uint32_t per_worker = 1;
};

struct dispatch {
  raw_sample sample;
  bool keyframe_only = false;
  bool needs_worker = true;  // false for text: tokenizing (and any replacement) is done inline
};

class decode_pool_core {
 public:
  explicit decode_pool_core(pool_limits limits);

  std::vector<msg::credit_grant> initial_reader_credits() const;
  void on_raw(raw_sample s);                    // throws std::logic_error past the credit bound
  void on_tensor_credit(const msg::credit_grant& g);
  // The tensor stage's latest pressure: the share of videos to decode keyframe-only.
  void on_pressure(const msg::stage_pressure& p);
  // The next sample to decode, if a worker, a quota slot and a tensor credit allow one.
  // Grants for the reader are appended to `upstream`.
  std::optional<dispatch> next_dispatch(std::vector<msg::credit_grant>& upstream);
  // A worker finished a sample of `kind` that took `decode_ms` (feeds adaptive quotas).
  void on_done(modality kind, double decode_ms);

  uint32_t quota(modality m) const { return quota_[size_t(m)]; }
  uint32_t busy(modality m) const { return busy_[size_t(m)]; }
  uint32_t queued() const;
  uint32_t tensor_credits_total() const;  // decodes the tensor stage still allows, all sources
  uint64_t downgrades() const noexcept { return downgrades_; }

 private:
  void recompute_quotas();
  // Whether the next video dispatched is decoded keyframe-only: spread evenly at the share
  // (each video adds the share to a debt; one whole unit of debt downgrades the video).
  bool downgrade_next_video();
  uint32_t slots() const { return limits_.workers * limits_.per_worker; }

  pool_limits limits_;
  std::vector<std::deque<raw_sample>> queues_;  // per source, in sequence order
  std::vector<uint32_t> tensor_credits_;
  std::array<uint32_t, modality_count> quota_{};
  std::array<uint32_t, modality_count> busy_{};
  std::array<double, modality_count> cost_ms_{1, 1, 1};  // moving average per modality
  std::array<bool, modality_count> present_{};
  uint32_t busy_total_ = 0;
  size_t rr_ = 0;
  double share_ = 0;  // of videos decoded keyframe-only, from the tensor stage's pressure
  double debt_ = 0;
  uint64_t downgrades_ = 0;
};

// The tensor stage's state as checkpoints see it: the global order's position at the last
// optimizer-step boundary a delivered batch reached, and how many of this rank's micro-batches
// of the next step were delivered since (0 at a boundary: then the position is the same on
// every rank and restores under any slot).
struct pipeline_position {
  std::vector<std::string> sources;
  global_position at;
  uint64_t micro = 0;
  bool operator==(const pipeline_position&) const = default;
};

class tensor_core {
 public:
  static constexpr uint64_t max_bad_run = 10000;
  // The batch size is the order's micro_batch.
  tensor_core(std::vector<std::string> source_names, std::vector<modality> source_kinds,
              std::vector<uint32_t> depth, order_core order, uint32_t batch_queue_capacity);

  std::vector<msg::credit_grant> initial_credits() const;
  void on_decoded(decoded_sample s);
  // Fills batch slots in the global order from the reorder buffers. A slot whose own sample
  // was bad arrives replaced (sample_repair.hpp); its bad sample and any shard damage riding
  // on it are recorded in `bad`. Returns B good samples when a batch is complete; grants for
  // the decode pool are appended to `upstream`. Nothing is returned while the ready-batch
  // queue is full (the consumer is behind; that is backpressure, not saturation).
  // Throws std::runtime_error when no replacement was found within max_bad_run samples: a
  // source that is all damage must stop the job with a reason, not spin forever.
  std::optional<std::vector<decoded_sample>> next_batch(std::vector<msg::credit_grant>& upstream,
                                                        bad_data_counts& bad);
  // next_batch one slot at a time, for a driver that packs each sample as its slot is filled
  // (its pixels are still in cache then): fill_slot fills the next slot of the batch being
  // assembled if its sample is here (same checks, grants and bad-data records as next_batch)
  // and returns its index; none = waiting for a sample, the batch is full, or the ready-batch
  // queue is full. slot(i) is a filled slot (the driver may move its pixels out); take_batch
  // returns the B samples once every slot is filled. next_batch = fill_slot until none, then
  // take_batch.
  std::optional<uint32_t> fill_slot(std::vector<msg::credit_grant>& upstream, bad_data_counts& bad);
  decoded_sample& slot(uint32_t i) { return slots_.at(i); }
  std::optional<std::vector<decoded_sample>> take_batch();
  // The driver handed a packed batch to the consumer / the consumer took one.
  void on_batch_taken() { if (ready_batches_ > 0) --ready_batches_; }
  uint32_t ready_batches() const noexcept { return ready_batches_; }

  // Position after the most recently completed batch (packed order = delivery order), and
  // the global index of that batch's first sample.
  pipeline_position position_after_last_batch() const { return last_position_; }
  uint64_t last_batch_global() const noexcept { return last_batch_global_; }
  // Throws std::invalid_argument when `p` is for other sources or is mid-step for this slot.
  void restore(const pipeline_position& p);

  // Timing of one packed batch, measured by the driver: how long packing took, how many
  // distinct frames it converted, how many it would have converted with no video downgraded,
  // and the consumer's step (from taking a batch to asking for the next, waiting excluded).
  void on_batch_timing(double pack_ms, uint32_t unique_frames, uint32_t full_frames, double consumer_step_ms);
  // The downgrade share: the least share of a batch's videos decoded keyframe-only with which
  // packing the batch and decoding it on the decode workers each fit in the consumer's step,
  // plus the margin the consumer's waits add (on_consumer_wait). Estimated at full quality
  // (packing per converted frame; decoding per sample of each modality, learnt from samples
  // decoded in full; a keyframe-only decode from downgraded ones) and by what one downgraded
  // video saves, so the estimates do not move when downgrades make the actual batches cheaper
  // (deciding on actual batch times flaps, because decodes run several batches ahead).
  msg::stage_pressure pressure(uint64_t epoch, uint32_t packed_waiting);
  // The consumer took a batch after `wait_ms` of waiting, `step_ms` after it took the one
  // before. What the estimates miss (cores shared with training, the stages' own overheads)
  // shows as waiting: while the share is above 0, a margin added to it moves by margin_gain x
  // (wait - target_wait_share x (step + wait)) / the moving average of step + wait, per
  // batch, within [0, 1]: the waits' share of the time is held near the target.
  void on_consumer_wait(double step_ms, double wait_ms);
  static constexpr double target_wait_share = 0.02;
  static constexpr double margin_gain = 0.25;
  // Decode workers sharing the decodes of a batch (the decode estimate divides by them).
  void set_decode_workers(uint32_t n) { decode_workers_ = std::max<uint32_t>(1, n); }
  double full_batch_decode_ms() const noexcept { return batch_decode_ms_; }
  uint32_t backlog() const noexcept { return backlog_; }
  uint32_t capacity() const noexcept { return capacity_; }

 private:
  // The share the full-quality estimates call for, before the margin.
  double downgrade_share_needed() const;
  std::vector<std::string> names_;
  std::vector<modality> kinds_;
  std::vector<uint32_t> depth_;
  order_core order_;
  uint32_t batch_size_;
  uint32_t batch_queue_capacity_;
  std::vector<std::map<uint64_t, decoded_sample>> buffers_;  // per source, by sequence
  std::vector<uint64_t> next_seq_;
  std::vector<decoded_sample> slots_;           // the batch being filled
  std::optional<order_entry> pending_;          // the slot being filled, not yet satisfied
  uint64_t batch_global_ = 0, last_batch_global_ = 0;
  pipeline_position last_position_;
  uint32_t ready_batches_ = 0;
  uint32_t backlog_ = 0;
  uint32_t capacity_ = 0;
  double share_ = 0;
  double margin_ = 0;
  double cycle_ms_ = 0;  // the consumer's step plus its wait, moving average
  bool cycle_seen_ = false;
  double ms_per_frame_ = 0, full_frames_ = 0, pull_interval_ms_ = 0;  // moving averages
  bool timed_ = false;
  std::array<double, modality_count> full_decode_ms_{};  // per sample, from full-quality decodes
  std::array<bool, modality_count> decode_seen_{};
  double keyframe_decode_ms_ = 0;  // per video, from keyframe-only decodes
  bool keyframe_seen_ = false;
  double videos_per_batch_ = 0;    // moving average
  double video_frames_ = 0;        // frames of a video decoded in full, moving average
  bool video_frames_seen_ = false;
  uint32_t decode_workers_ = 1;
  double batch_decode_ms_ = 0;  // moving average of a batch's full-quality decode time / workers
  bool decode_timed_ = false;
};

}  // namespace msomni::data
