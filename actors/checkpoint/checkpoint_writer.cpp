// Asynchronous per-rank checkpoint writer (see checkpoint_writer.hpp).
#include "checkpoint_writer.hpp"

#include "checkpoint_error.hpp"

#include <chrono>

namespace msomni::ckpt {

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Copies src into dst reusing dst's allocations where names line up (they do from one
// step to the next, since the model's state layout does not change between saves).
void copy_into(rank_state& dst, const rank_state& src) {
  dst.tensors.resize(src.tensors.size());
  for (size_t i = 0; i < src.tensors.size(); ++i) {
    dst.tensors[i].name = src.tensors[i].name;
    dst.tensors[i].shape = src.tensors[i].shape;
    dst.tensors[i].values.assign(src.tensors[i].values.begin(), src.tensors[i].values.end());
  }
  dst.blobs.resize(src.blobs.size());
  for (size_t i = 0; i < src.blobs.size(); ++i) {
    dst.blobs[i].name = src.blobs[i].name;
    dst.blobs[i].bytes.assign(src.blobs[i].bytes.begin(), src.blobs[i].bytes.end());
  }
}

}  // namespace

checkpoint_writer::checkpoint_writer(const checkpoint_store& store, uint32_t rank, done_fn on_done,
                                     clock_fn clock)
    : store_(store), rank_(rank), on_done_(std::move(on_done)),
      clock_(clock ? std::move(clock) : clock_fn(steady_ns)) {
  thread_ = std::thread([this] { run(); });
}

checkpoint_writer::~checkpoint_writer() {
  {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return !busy_; });
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void checkpoint_writer::account_blocked(int64_t start_ns) {
  const int64_t d = clock_() - start_ns;
  metrics_.blocked_ns_last = d;
  metrics_.blocked_ns_total += d;
}

checkpoint_writer::submit_result checkpoint_writer::submit(const checkpoint_meta& meta,
                                                           rank_state&& snapshot) {
  const int64_t t0 = clock_();
  {
    std::lock_guard lk(mu_);
    if (busy_) {
      ++metrics_.refused_busy;
      return submit_result::refused_busy;
    }
    busy_ = true;
    ++metrics_.accepted;
    job_ = std::move(snapshot);
    job_meta_ = meta;
    account_blocked(t0);
  }
  cv_.notify_all();
  return submit_result::accepted;
}

checkpoint_writer::submit_result checkpoint_writer::submit_copy(const checkpoint_meta& meta,
                                                                const rank_state& live) {
  const int64_t t0 = clock_();
  {
    std::lock_guard lk(mu_);
    if (busy_) {
      ++metrics_.refused_busy;
      return submit_result::refused_busy;
    }
    // Not busy, so the writer thread holds neither buffer: copying outside the lock would
    // need a second state; the copy is the step-boundary cost either way.
    copy_into(spare_, live);
    std::swap(job_, spare_);
    busy_ = true;
    ++metrics_.accepted;
    job_meta_ = meta;
    account_blocked(t0);
  }
  cv_.notify_all();
  return submit_result::accepted;
}

void checkpoint_writer::run() {
  shard_encoder encoder(store_.options().codec);
  for (;;) {
    checkpoint_meta meta;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || job_meta_.has_value(); });
      if (!job_meta_) return;
      meta = *job_meta_;
    }
    save_outcome out;
    out.meta = meta;
    out.rank = rank_;
    const int64_t t0 = clock_();
    try {
      out.record = store_.write_shard(meta, rank_, job_, encoder);
      out.ok = true;
    } catch (const checkpoint_error& e) {
      out.error = e.what();
      out.sys_errno = e.sys_errno();
    } catch (const std::exception& e) {
      out.error = e.what();
    }
    out.write_ns = clock_() - t0;
    {
      std::lock_guard lk(mu_);
      job_meta_.reset();
      std::swap(job_, spare_);  // keep the buffers for the next submit_copy
      metrics_.write_ns_last = out.write_ns;
      metrics_.bytes_last = out.record.bytes;
      ++(out.ok ? metrics_.completed : metrics_.failed);
    }
    // Report before turning idle, so a caller that waits for idle sees the outcome first.
    if (on_done_) on_done_(out);
    {
      std::lock_guard lk(mu_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

bool checkpoint_writer::busy() const {
  std::lock_guard lk(mu_);
  return busy_;
}

void checkpoint_writer::wait_idle() const {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return !busy_; });
}

writer_metrics checkpoint_writer::metrics() const {
  std::lock_guard lk(mu_);
  return metrics_;
}

}  // namespace msomni::ckpt
