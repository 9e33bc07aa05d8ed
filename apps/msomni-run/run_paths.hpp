// Where a job writes, and the proof that it may. A run directory and a checkpoint root each
// carry an ownership marker written when msomni first claims them (.msomni-run with the
// run's id, .msomni-checkpoints with the id of the run that owns it) and a lock held for the
// job's life (one writer each). msomni uses a directory only when it is new, empty, or marked
// as this run's, and deletes (--fresh) only entries of the kinds it writes, inside
// directories so marked. Everything else is refused before anything starts, --dry-run too.
//
//   check_run_paths (read only)  ->  claim_run_paths (create 0700, lock, re-check, mark)
//                                ->  remove_job_outputs (only with --fresh, under the locks)
#pragma once

#include "config/job_config.hpp"
#include "core/dir_lock.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::apps {

inline constexpr const char* run_marker_file = ".msomni-run";
inline constexpr const char* checkpoint_marker_file = ".msomni-checkpoints";

struct run_paths {
  std::filesystem::path run_dir;         // absolute, lexically normal
  std::filesystem::path checkpoint_dir;  // absolute, lexically normal
};

// --run-dir (or runs/<job.name>) and checkpoint.dir (relative to the run directory).
run_paths resolve_run_paths(const config::job_config& cfg, const std::string& run_dir_flag);

enum class dir_role { run, checkpoints };

// What the file system says about a directory msomni is about to use (gathered by
// facts_of; built by hand in tests).
struct dir_facts {
  bool exists = false;
  bool is_directory = false;
  bool is_filesystem_root = false;
  bool is_home = false;
  std::vector<std::string> foreign_entries;  // entries other than the marker and lock, first few
  size_t foreign_count = 0;
  std::optional<std::string> marker_run_id;  // the role's marker, when present and readable
};

// Why `f` may not be used in `role`, or nullopt when it may. A checkpoint root must be
// marked with `owner_run_id` (the run directory's id; empty when the run directory is new,
// so any marked root belongs to someone else).
std::optional<std::string> ownership_problem(const dir_facts& f, dir_role role, const std::string& owner_run_id);

dir_facts facts_of(const std::filesystem::path& dir, dir_role role);

// Read-only checks of both directories and how they relate; each problem is one line that
// says where and why (checkpoint.dir problems carry the config's file:line:col).
std::vector<std::string> check_run_paths(const run_paths& p, const config::job_config& cfg);

// A directory that may not be used or is in use: nothing was started.
struct run_paths_refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct claimed_run {
  dir_lock run_lock;
  dir_lock checkpoint_lock;
  std::string run_id;
  std::vector<std::string> notes;  // e.g. a lock taken over from a dead process
};

// Creates what is missing (mode 0700), takes both locks, checks ownership again under them
// and writes the markers. Throws run_paths_refused with the reason (a second msomni-run on
// the same run directory gets the holder's pid and host), std::runtime_error on I/O errors.
claimed_run claim_run_paths(const run_paths& p, const config::job_config& cfg);

struct removal_report {
  size_t removed = 0;
  std::vector<std::string> kept;  // entries left alone because msomni does not write such names
};

// --fresh: removes the journals, rank logs, attempt counter and every checkpoint, staging
// directory and latest pointer of a claimed run; nothing else.
removal_report remove_job_outputs(const run_paths& p);

}  // namespace msomni::apps
