// The I/O side of checkpoints in one root directory: ranks write shards into a staging
// directory, the coordinator commits (manifest, rename, directory fsync, `latest` last),
// retention and crash cleanup apply the policy core's plan, incremental checkpoints reuse
// a base's shards and can be merged into full ones, and loading verifies every checksum
// before returning any state, falling back to older checkpoints (and saying which and why).
//
// Save protocol (one save in flight per root):
//   rank r:       write_shard(meta, r, state)  -> .tmp-step-N-eE/shard-r.bin   (fsynced)
//   coordinator:  commit(meta, records)        -> MANIFEST, rename to step-N, fsync root,
//                                                 latest := step-N, cleanup
// A crash anywhere leaves either the old set of step-* directories or the new one, plus
// temporaries that the next commit removes.
#pragma once

#include "checkpoint_policy.hpp"
#include "durable_io.hpp"
#include "manifest.hpp"
#include "rank_state.hpp"
#include "shard_codec.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace msomni::ckpt {

struct store_options {
  uint64_t keep = 3;
  codec_options codec;
  io_fault_plan* faults = nullptr;  // tests only
};

struct verified_checkpoint {
  manifest m;
  std::vector<rank_state> ranks;  // indexed by rank; only the requested ones are filled
};

struct load_result {
  std::optional<verified_checkpoint> checkpoint;  // empty: nothing loadable at all
  std::vector<std::string> skipped;               // "step-00000120: <why>" per fallback
};

class checkpoint_store {
 public:
  explicit checkpoint_store(std::filesystem::path root, store_options opts = {});

  const std::filesystem::path& root() const noexcept { return root_; }
  const store_options& options() const noexcept { return opts_; }

  // Rank side: one shard into the staging directory of (meta.step, meta.epoch).
  shard_record write_shard(const checkpoint_meta& meta, uint32_t rank, const rank_state& state,
                           shard_encoder& encoder) const;

  // Coordinator side. `written` holds every rank's record for a full checkpoint, or only the
  // changed ranks' for an incremental one (the rest are taken from base_step's manifest).
  manifest commit(const checkpoint_meta& meta, std::vector<shard_record> written,
                  checkpoint_kind kind = checkpoint_kind::full, uint64_t base_step = 0);
  // commit() up to its commit point and `latest`, without the cleanup that follows: for a
  // coordinator that tells the ranks first and then runs cleanup() off their path. A failure
  // of that later cleanup does not undo the commit.
  manifest commit_durable(const checkpoint_meta& meta, std::vector<shard_record> written,
                          checkpoint_kind kind = checkpoint_kind::full, uint64_t base_step = 0);

  // After a failed save: removes that save's own staging directory (and nothing else), so a
  // full disk gets its space back for the next try. Idempotent; true when it was there.
  bool abandon(const checkpoint_meta& meta);

  // Both sides in one process (tests, tools, single-process jobs).
  manifest save_full(const checkpoint_meta& meta, const std::vector<rank_state>& ranks);
  manifest save_incremental(const checkpoint_meta& meta, uint64_t base_step,
                            const std::map<uint32_t, rank_state>& changed);

  // Copies the shards an incremental checkpoint borrows into its own directory and
  // replaces its manifest with a full one (atomically), so the base can be retired.
  manifest merge(uint64_t step);

  // Retention + removal of temporaries other than `in_flight` staging directories.
  cleanup_plan cleanup(const std::set<std::string>& in_flight = {});

  std::vector<root_entry> list() const;
  std::optional<std::string> latest_pointer() const;  // the text of `latest`, trimmed
  manifest read_manifest(uint64_t step) const;

  // Verifies every shard of `step` (sizes, file XXH3, every entry's checksums) and keeps
  // the decoded state of `ranks` (all when empty). Throws checkpoint_error on any problem.
  verified_checkpoint load(uint64_t step, const std::set<uint32_t>& ranks = {}) const;
  // Newest checkpoint that loads; every newer one that did not is listed in `skipped`.
  load_result load_latest(const std::set<uint32_t>& ranks = {}) const;

 private:
  std::string next_temp_name(const std::string& what) const;
  std::vector<checkpoint_status> scan_checkpoints(const std::vector<root_entry>& listing) const;

  std::filesystem::path root_;
  store_options opts_;
};

// The text of `root`/latest (as checkpoint_store::latest_pointer reads it), and the step it
// names, without opening or creating the store: nullopt when there is none, it cannot be
// read, or (latest_step) it names no checkpoint.
std::optional<std::string> latest_pointer_of(const std::filesystem::path& root);
std::optional<uint64_t> latest_step(const std::filesystem::path& root);

}  // namespace msomni::ckpt
