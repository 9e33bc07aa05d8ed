// The checkpoint policy core: pure decisions over what a checkpoint root contains. Given a
// directory listing (and what the manifests say), it classifies entries, decides what
// retention and crash cleanup remove, orders load candidates, and tracks which ranks'
// shards of a save have arrived. No file system, clock or thread here: checkpoint_store
// does the I/O and the tests drive this with plain vectors.
//
// Names in a root:  step-NNNNNNNN/        committed checkpoint (MANIFEST + shards)
//                   latest                 text: the newest committed directory name
//                   .tmp-step-N-eE/        staging directory of a save in progress
//                   .tmp-*                 any other temporary (file or directory)
//                   .trash-*               a directory being removed
#pragma once

#include "manifest.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace msomni::ckpt {

struct root_entry {
  std::string name;
  bool is_dir = false;
};

enum class entry_class { checkpoint, temporary, latest_pointer, other };

struct classified_entry {
  entry_class cls = entry_class::other;
  uint64_t step = 0;  // checkpoint only
};

classified_entry classify_entry(const root_entry& e);
std::string staging_dir_name(uint64_t step, uint64_t epoch);

// What the I/O layer learned about one committed directory.
struct checkpoint_status {
  uint64_t step = 0;
  bool manifest_ok = false;            // manifest present, checksummed, parsable
  std::set<uint64_t> references;       // other checkpoint steps whose shard files it uses
  std::string problem;                 // why manifest_ok is false
};

struct cleanup_plan {
  std::vector<std::string> remove;     // entry names to delete
  std::vector<std::string> reasons;    // one line per removal, for the log
};

// Retention keeps the `keep` newest good checkpoints and everything they reference; removes
// older good ones, bad ones older than the oldest kept one, and every temporary except the
// staging directories named in `in_flight`. Newer bad ones stay for a human to inspect.
cleanup_plan plan_cleanup(const std::vector<root_entry>& listing,
                          const std::vector<checkpoint_status>& checkpoints, uint64_t keep,
                          const std::set<std::string>& in_flight);

// Committed checkpoint steps, newest first: the order in which a loader tries them.
std::vector<uint64_t> load_order(const std::vector<root_entry>& listing);

// Coordinator side of a save: which ranks reported their shard. Reports may repeat
// (idempotent); a rank reporting two different results fails the save.
struct shard_report {
  uint32_t rank = 0;
  bool ok = false;
  shard_record record;
  std::string error;
};

class commit_tracker {
 public:
  enum class state { collecting, ready, failed };
  commit_tracker(checkpoint_meta meta, std::set<uint32_t> expected_ranks);
  state on_report(const shard_report& r);
  state current() const noexcept { return state_; }
  const std::string& failure() const noexcept { return failure_; }
  const checkpoint_meta& meta() const noexcept { return meta_; }
  std::vector<shard_record> records() const;  // sorted by rank; complete when ready

 private:
  checkpoint_meta meta_;
  std::set<uint32_t> expected_;
  std::vector<shard_report> got_;
  state state_ = state::collecting;
  std::string failure_;
};

}  // namespace msomni::ckpt
