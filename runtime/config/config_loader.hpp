// Loading a job config: TOML file + --set overrides -> validated job_config, or every error
// found, each as FILE:LINE:COL: key.path: reason.
#pragma once

#include "config/config_error.hpp"
#include "config/job_config.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace msomni::config {

// Parses and validates; throws config_errors listing every problem.
job_config load_file(const std::string& path, const std::vector<std::string>& overrides = {});

// Same, from text in memory; `source_name` is what errors call the file.
job_config load_string(std::string_view toml_text, const std::string& source_name,
                       const std::vector<std::string>& overrides = {});

// A scheduler service's config file (msomni-sched --config): a [scheduler] table and
// nothing else; throws config_errors listing every problem.
scheduler_section load_scheduler_file(const std::string& path);

// Whether a local data source (its resolved path) can yield one sample of `kind` with members
// of at most `max_sample_bytes`: "" when it can, else why not. The data layer supplies it
// (data::usable_source_problem); the config layer cannot read shards itself.
using source_check = std::function<std::string(const std::filesystem::path& path, modality kind, uint64_t max_sample_bytes)>;

// Checks against the environment (paths exist, ports free, directories writable) and, given
// `usable_source`, that every local and remote data source has a usable sample (for a remote
// one the store is asked; what the check throws becomes the source's error).
// Relative data paths resolve against the config file's directory.
std::vector<config_error> check_environment(const job_config& cfg, const source_check& usable_source = {});

// An error at `key`, located where the config (or its --set override) gave that key; at the
// file's start when the key was left at its default.
config_error located(const job_config& cfg, const std::string& key, std::string reason);

// Where a local data uri points: relative paths are taken from the config file's directory;
// remote uris (s3://, http(s)://) are returned as written.
std::filesystem::path resolve_data_path(const job_config& cfg, const std::string& uri);

// s3://bucket/prefix, http://host/path, https://host/path: shards in a remote store.
bool is_remote_source(const std::string& uri);
// Why a remote uri cannot name a source (no host or bucket, white space, credentials in the
// uri); "" when it can.
std::string remote_source_problem(const std::string& uri);

// Human-readable resolved plan for --dry-run; `local` is what this machine's GPUs offer to
// the ranks msomni-run starts itself (see device_choice.hpp).
struct node_gpu_facts;
std::string render_plan(const job_config& cfg, const node_gpu_facts& local);

// Stable 64-bit hash of the resolved configuration (for checkpoint manifests).
uint64_t config_hash(const job_config& cfg);

}  // namespace msomni::config
