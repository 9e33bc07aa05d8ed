// rank_checkpointer (see rank_checkpointer.hpp).
#include "rank_checkpointer.hpp"

#include "core/log.hpp"
#include "manifest.hpp"
#include "reshard.hpp"

#include <array>
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

rank_checkpointer::rank_checkpointer(checkpointing_settings s, uint32_t rank)
    : settings_(std::move(s)),
      rank_(rank),
      store_(settings_.dir, ckpt::store_options{settings_.keep, {settings_.zstd_level, settings_.zstd_threads}, nullptr}) {
  writer_ = std::make_unique<ckpt::checkpoint_writer>(store_, rank_, [this](const ckpt::save_outcome& o) {
    std::lock_guard<std::mutex> lock(mutex_);
    outcome_ = o;
  });
}

rank_checkpointer::~rank_checkpointer() { writer_.reset(); }

double rank_checkpointer::blocked_seconds() const { return writer_->metrics().blocked_ns_total / 1e9; }

void rank_checkpointer::after_step(rank_trainer& trainer, transport::communicator& comm, bool last) {
  const uint64_t step = trainer.steps_done();
  if (step % settings_.interval_steps != 0 && !last) return;
  submit(trainer, comm);
}

void rank_checkpointer::submit(rank_trainer& trainer, transport::communicator& comm) {
  const uint64_t step = trainer.steps_done();
  finish(comm);  // at most one save in flight
  ckpt::checkpoint_meta meta{step, 0, static_cast<uint32_t>(comm.size()), settings_.config_hash, comm.epoch()};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outcome_.reset();
  }
  if (writer_->submit(meta, to_rank_state(trainer.save_state())) != ckpt::checkpoint_writer::submit_result::accepted)
    throw std::runtime_error("checkpoint writer refused step " + std::to_string(step) + " while idle");
  pending_ = meta;
}

void rank_checkpointer::finish(transport::communicator& comm) {
  if (!pending_) return;
  writer_->wait_idle();
  ckpt::save_outcome mine;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!outcome_) throw std::runtime_error("checkpoint writer finished without an outcome");
    mine = *outcome_;
  }
  // Every rank learns every record (and whether it failed): one broadcast per rank.
  std::vector<ckpt::shard_record> records;
  bool all_ok = true;
  for (int r = 0; r < comm.size(); ++r) {
    std::array<uint64_t, 6> packed{};
    if (r == static_cast<int>(rank_))
      packed = {mine.ok ? 1u : 0u, mine.record.rank, mine.record.bytes, mine.record.xxh3, mine.record.raw_bytes,
                mine.record.entries};
    comm.broadcast(std::as_writable_bytes(std::span<uint64_t>(packed)), r);
    all_ok = all_ok && packed[0] == 1;
    records.push_back({static_cast<uint32_t>(packed[1]), packed[2], packed[3], packed[4],
                       static_cast<uint32_t>(packed[5]), ckpt::checkpoint_dir_name(pending_->step)});
  }
  if (!mine.ok) {
    MSOMNI_LOG(error, "checkpoint") << "rank " << rank_ << ": " << mine.error;
  }
  uint8_t committed = 0;
  if (rank_ == 0) {
    msg::checkpoint_done report{pending_->step, 0, false, 0, 0, all_ok ? "" : "a rank's shard failed to write"};
    if (all_ok) {
      try {
        store_.commit(*pending_, records);
        committed = 1;
        report.ok = true;
        for (const auto& r : records) report.bytes += r.bytes;
      } catch (const std::exception& e) {
        report.error = e.what();
        MSOMNI_LOG(error, "checkpoint") << "commit of step " << pending_->step << " failed: " << e.what();
      }
    }
    if (settings_.on_commit) settings_.on_commit(report);
  }
  comm.broadcast(std::as_writable_bytes(std::span<uint8_t>(&committed, 1)), 0);
  if (committed) {
    ++committed_;
  } else {
    MSOMNI_LOG(warn, "checkpoint") << "step " << pending_->step << " was not committed; the previous checkpoint stays";
  }
  pending_.reset();
}

uint64_t rank_checkpointer::save_verified(rank_trainer& trainer, transport::communicator& comm) {
  const uint64_t step = trainer.steps_done();
  const uint64_t before = committed_;
  if (!pending_ || pending_->step != step) submit(trainer, comm);
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
                                                                 std::string& log) {
  ckpt::checkpoint_store store(dir);
  auto r = store.load_latest({rank});
  for (const auto& s : r.skipped) log += "skipped " + s + "\n";
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
