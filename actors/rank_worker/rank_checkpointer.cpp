// rank_checkpointer (see rank_checkpointer.hpp).
#include "rank_checkpointer.hpp"

#include "core/log.hpp"
#include "manifest.hpp"
#include "reshard.hpp"

#include <array>
#include <cmath>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace msomni::rank_worker {

ckpt::rank_state to_rank_state(const model::model_state& s) {
  ckpt::rank_state r;
  for (const auto& t : s.tensors) r.put_tensor(t.name, t.shape, t.values);
  for (const auto& b : s.blobs) r.put_blob(b.name, b.bytes);
  return r;
}

model::model_state to_model_state(const ckpt::rank_state& s) {
  model::model_state m;
  for (const auto& t : s.tensors) m.tensors.push_back({t.name, t.shape, t.values});
  for (const auto& b : s.blobs) m.blobs.push_back({b.name, b.bytes});
  return m;
}

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What another rank's failure looks like from here: only its errno travels.
std::string failure_of(uint32_t rank, uint64_t sys_errno) {
  return "rank " + std::to_string(rank) + "'s shard failed to write" +
         (sys_errno ? std::string(" (") + std::strerror(static_cast<int>(sys_errno)) + ")" : std::string());
}

}  // namespace

std::string first_nonfinite_tensor(const model::model_state& s) {
  for (const auto& t : s.tensors)
    for (float v : t.values)
      if (!std::isfinite(v)) return t.name;
  return {};
}

rank_checkpointer::rank_checkpointer(checkpointing_settings s, uint32_t rank)
    : settings_(std::move(s)),
      rank_(rank),
      store_(settings_.dir,
             ckpt::store_options{settings_.keep, {settings_.zstd_level, settings_.zstd_threads}, settings_.faults}),
      cadence_(settings_.interval_steps, settings_.max_consecutive_failures) {
  writer_ = std::make_unique<ckpt::checkpoint_writer>(store_, rank_, [this](const ckpt::save_outcome& o) {
    std::lock_guard<std::mutex> lock(mutex_);
    outcome_ = o;
  });
}

rank_checkpointer::~rank_checkpointer() { writer_.reset(); }

double rank_checkpointer::blocked_seconds() const { return writer_->metrics().blocked_ns_total / 1e9; }

std::optional<save_timing> rank_checkpointer::take_decided() {
  auto d = std::move(decided_);
  decided_.reset();
  return d;
}

void rank_checkpointer::after_step(rank_trainer& trainer, transport::communicator& comm, bool last) {
  after_step(trainer.steps_done(), [&trainer] { return trainer.save_state(); }, comm, last, trainer.last_step_finite());
}

void rank_checkpointer::after_step(uint64_t step, const std::function<model::model_state()>& snapshot,
                                   transport::communicator& comm, bool last, bool healthy) {
  last_step_seen_ = step;
  const bool due = cadence_.due(step, last);
  // Every rank has the same pending_ after the same step, so they all join this collective.
  if (pending_ && !due && all_durable(comm)) finish(comm);
  if (due) submit(step, snapshot, comm, healthy);
}

bool rank_checkpointer::all_durable(transport::communicator& comm) {
  // One slot per rank (a chunk each in the ring), 1 where that rank's writer is still busy.
  std::vector<float> not_done(static_cast<size_t>(comm.size()), 0.0f);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    not_done[rank_] = outcome_ ? 0.0f : 1.0f;
  }
  comm.all_reduce(not_done, transport::reduce_op::sum);
  uint64_t busy = 0;
  for (float v : not_done) busy += v > 0.5f ? 1 : 0;
  return ckpt::save_cadence::commit_now(busy);
}

void rank_checkpointer::submit(uint64_t step, const std::function<model::model_state()>& snapshot,
                               transport::communicator& comm, bool healthy) {
  finish(comm);  // at most one save in flight
  auto state = snapshot();
  // Data-parallel ranks hold the same parameters and moments, but the ranks agree anyway (one
  // value each): a save is all ranks' or none.
  const auto bad = healthy ? first_nonfinite_tensor(state) : std::string("the step's loss or gradient");
  std::vector<float> refuse{bad.empty() ? 0.0f : 1.0f};
  comm.all_reduce(refuse, transport::reduce_op::sum);
  if (refuse[0] > 0.5f) {
    const auto why = "skipped: the state of step " + std::to_string(step) + " is not finite (" +
                     (bad.empty() ? std::string("on another rank") : bad) + "); the last finite checkpoint stays";
    MSOMNI_LOG(warn, "checkpoint") << why;
    if (rank_ == 0 && settings_.on_commit) settings_.on_commit(msg::checkpoint_done{step, 0, false, 0, 0, why});
    return;
  }
  ckpt::checkpoint_meta meta{step, 0, static_cast<uint32_t>(comm.size()), settings_.config_hash, comm.epoch()};
  meta.config = settings_.config;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outcome_.reset();
  }
  if (writer_->submit(meta, to_rank_state(state)) != ckpt::checkpoint_writer::submit_result::accepted)
    throw std::runtime_error("checkpoint writer refused step " + std::to_string(step) + " while idle");
  submitted_ns_ = steady_ns();
  pending_ = meta;
}

void rank_checkpointer::finish(transport::communicator& comm) {
  if (!pending_) return;
  writer_->wait_idle();
  const int64_t decide_from = steady_ns();
  const ckpt::save_outcome mine = own_outcome();
  std::string why;  // the first failed rank's cause
  const auto records = exchange_records(comm, mine, why);
  std::string reason;
  const bool committed_by_zero = rank_ == 0 && commit_on_rank_zero(records, why, reason);
  const bool committed = share_verdict(comm, committed_by_zero, reason);
  tidy_after_verdict(committed);
  conclude(committed, reason, mine.write_ns, decide_from);
}

ckpt::save_outcome rank_checkpointer::own_outcome() {
  ckpt::save_outcome mine;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!outcome_) throw std::runtime_error("checkpoint writer finished without an outcome");
    mine = *outcome_;
  }
  if (!mine.ok) {
    MSOMNI_LOG(error, "checkpoint") << "rank " << rank_ << ": " << mine.error;
  }
  return mine;
}

std::vector<ckpt::shard_record> rank_checkpointer::exchange_records(transport::communicator& comm,
                                                                    const ckpt::save_outcome& mine, std::string& why) {
  // Every rank learns every record (and whether and why it failed): one broadcast per rank.
  std::vector<ckpt::shard_record> records;
  for (int r = 0; r < comm.size(); ++r) {
    std::array<uint64_t, 7> packed{};
    if (r == static_cast<int>(rank_))
      packed = {mine.ok ? 1u : 0u, mine.record.rank, mine.record.bytes, mine.record.xxh3, mine.record.raw_bytes,
                mine.record.entries, static_cast<uint64_t>(mine.sys_errno)};
    comm.broadcast(std::as_writable_bytes(std::span<uint64_t>(packed)), r);
    if (packed[0] != 1 && why.empty())
      why = r == static_cast<int>(rank_) ? "rank " + std::to_string(rank_) + ": " + mine.error
                                         : failure_of(static_cast<uint32_t>(r), packed[6]);
    records.push_back({static_cast<uint32_t>(packed[1]), packed[2], packed[3], packed[4],
                       static_cast<uint32_t>(packed[5]), ckpt::checkpoint_dir_name(pending_->step)});
  }
  return records;
}

bool rank_checkpointer::commit_on_rank_zero(const std::vector<ckpt::shard_record>& records, const std::string& why,
                                            std::string& reason) {
  bool committed = false;
  msg::checkpoint_done report{pending_->step, 0, false, 0, 0, why};
  if (why.empty()) {
    try {
      store_.commit_durable(*pending_, records);  // retention runs once the ranks know
      committed = true;
      report.ok = true;
      for (const auto& r : records) report.bytes += r.bytes;
    } catch (const std::exception& e) {
      report.error = std::string("commit: ") + e.what();
      MSOMNI_LOG(error, "checkpoint") << "commit of step " << pending_->step << " failed: " << e.what();
    }
  }
  if (!committed) {
    // Only this save's staging directory: the previous checkpoint and other files stay.
    try {
      store_.abandon(*pending_);
    } catch (const std::exception& e) {
      report.error += "; its staging directory could not be removed: " + std::string(e.what());
    }
  }
  reason = report.error;
  if (settings_.on_commit) settings_.on_commit(report);
  return committed;
}

bool rank_checkpointer::share_verdict(transport::communicator& comm, bool committed, std::string& reason) {
  // Only rank 0's values count: the others send zeros and receive its verdict.
  std::array<uint64_t, 2> verdict{0, 0};  // committed, length of rank 0's reason
  if (rank_ == 0) verdict = {committed ? 1u : 0u, reason.size()};
  comm.broadcast(std::as_writable_bytes(std::span<uint64_t>(verdict)), 0);
  reason.resize(verdict[1]);
  if (verdict[1] > 0) comm.broadcast(std::as_writable_bytes(std::span<char>(reason)), 0);
  return verdict[0] == 1;
}

void rank_checkpointer::tidy_after_verdict(bool committed) {
  if (committed && rank_ == 0) {
    // Retention and temporaries after the ranks have their verdict: deleting older
    // checkpoints is not on the save's path. A failure here leaves the commit standing.
    try {
      const auto plan = store_.cleanup();
      for (const auto& r : plan.reasons) MSOMNI_LOG(debug, "checkpoint") << "removed " << r;
    } catch (const std::exception& e) {
      MSOMNI_LOG(warn, "checkpoint") << "cleanup after the commit of step " << pending_->step << " failed: " << e.what();
    }
  }
  if (!committed && rank_ != 0) {
    try {
      store_.abandon(*pending_);  // storage not shared with rank 0; a no-op when it is
    } catch (const std::exception& e) {
      MSOMNI_LOG(warn, "checkpoint") << "rank " << rank_ << ": " << e.what();
    }
  }
}

void rank_checkpointer::conclude(bool committed, const std::string& reason, int64_t write_ns, int64_t decide_from) {
  const int64_t now = steady_ns();
  decided_ = save_timing{pending_->step, last_step_seen_, committed, now - submitted_ns_, write_ns,
                         now - decide_from, reason};
  const uint64_t step = pending_->step;
  pending_.reset();
  if (committed) {
    ++committed_;
  } else {
    MSOMNI_LOG(warn, "checkpoint") << "step " << step << " was not committed (" << reason
                                   << "); the previous checkpoint stays";
  }
  if (cadence_.on_outcome(committed) == ckpt::save_cadence::verdict::give_up)
    throw checkpoint_give_up(std::to_string(cadence_.failures_in_a_row()) + " checkpoint saves failed in a row " +
                             "(checkpoint.max_consecutive_failures = " +
                             std::to_string(cadence_.max_consecutive_failures()) + "); the last, of step " +
                             std::to_string(step) + ": " + reason);
}

uint64_t rank_checkpointer::save_verified(rank_trainer& trainer, transport::communicator& comm) {
  const uint64_t step = trainer.steps_done();
  const uint64_t before = committed_;
  last_step_seen_ = step;
  if (!pending_ || pending_->step != step) submit(step, [&trainer] { return trainer.save_state(); }, comm);
  finish(comm);
  uint8_t verified = 0;
  if (committed_ > before && rank_ == 0) {
    try {
      (void)store_.load(step);  // reads every shard back and checks every checksum
      verified = 1;
    } catch (const std::exception& e) {
      MSOMNI_LOG(error, "checkpoint") << "step " << step << " did not verify: " << e.what();
    }
  }
  comm.broadcast(std::as_writable_bytes(std::span<uint8_t>(&verified, 1)), 0);
  if (!verified) throw std::runtime_error("the checkpoint of step " + std::to_string(step) + " was not committed and verified");
  return step;
}

std::optional<model::model_state> rank_checkpointer::load_latest(const std::string& dir, uint32_t rank,
                                                                 uint32_t world, bool synthetic_data,
                                                                 std::string& log, uint64_t* skipped) {
  ckpt::checkpoint_store store(dir);
  auto r = store.load_latest({rank});
  for (const auto& s : r.skipped) log += "skipped " + s + "\n";
  if (skipped) *skipped = r.skipped.size();
  if (!r.checkpoint) return std::nullopt;
  const auto meta = r.checkpoint->m.meta;
  if (meta.world_size == world) {
    log += "loaded step " + std::to_string(meta.step) + " (verified)\n";
    return to_model_state(r.checkpoint->ranks[rank]);
  }
  // A different replica count: weights, optimizer moments and counters are replicated in
  // data parallelism, so every new rank takes them from the checkpoint (reshard checks that
  // all old ranks agree in shape); the data position is per rank.
  auto all = store.load(meta.step);
  ckpt::reshard_rules rules;
  rules.replicated_prefixes = {"param/", "adam_m/", "adam_v/", "optimizer/", "model/", "trainer/"};
  rules.sharded_prefixes = {};
  auto resharded = ckpt::reshard(all.ranks, world, rules);
  auto mine = resharded[rank];
  // Replicated blobs (counters, signatures) come from rank 0, and so does the data position
  // when all old ranks agree on it (a global position, see batch_source.hpp).
  const auto* first_position = all.ranks[0].find_blob("data/position");
  bool same_position = first_position != nullptr;
  for (const auto& r : all.ranks) {
    const auto* p = r.find_blob("data/position");
    same_position = same_position && p && p->bytes == first_position->bytes;
  }
  for (const auto& b : all.ranks[0].blobs) {
    bool replicated = (synthetic_data || same_position) && b.name == "data/position";
    for (const auto& prefix : rules.replicated_prefixes) replicated = replicated || b.name.rfind(prefix, 0) == 0;
    if (replicated && !mine.find_blob(b.name)) mine.put_blob(b.name, b.bytes);
  }
  log += "loaded step " + std::to_string(meta.step) + " (verified) written by " + std::to_string(meta.world_size) +
         " ranks, resharded to " + std::to_string(world) +
         (synthetic_data || same_position ? "\n" : "; the ranks' data positions differ, so the data order restarts\n");
  return to_model_state(mine);
}

}  // namespace msomni::rank_worker
