// Whether a job config may resume from a checkpoint another config wrote. Both are the
// resolved config by key (job_config::resolved_values; a manifest's `config KEY VALUE`
// lines): the comparison is key by key, and pure (no files).
//
// Keys that decide what the saved state means must be equal: every [model] key (the
// architecture, vocabulary and a plugin's own keys) but model.plugin (the file it is loaded
// from: a plugin moved elsewhere is the same model when its name and keys are), every [data] key (the sources' names,
// uris, modalities and weights, the mix and shuffling: the sample order the data position
// counts in), and training.seed, training.global_batch and training.micro_batch (the
// global order's draw and the slot a data position restores under). A key of those that
// one side has and the other lacks differs too.
// Every other key may change on a resume (training.steps, lr and its schedule, weight decay,
// clipping, checkpoint interval and retention, replicas and their bounds, io tuning, memory,
// cluster, ...): such changes are listed, so the resume event can name them.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace msomni::config {

struct config_change {
  std::string key;
  std::string saved;  // the checkpoint's value as TOML text; "" when it had no such key
  std::string now;    // this config's value; "" when it has no such key
  bool operator==(const config_change&) const = default;
};

struct resume_comparison {
  bool saved_config_known = false;        // false: the checkpoint records no config (not compared)
  std::vector<config_change> refused;     // keys that must not change, in key order
  std::vector<config_change> accepted;    // keys that may change, in key order
  bool compatible() const noexcept { return refused.empty(); }
};

// True for the keys a resume must keep (see above).
bool key_fixes_saved_state(const std::string& key);

resume_comparison compare_for_resume(const std::map<std::string, std::string>& saved,
                                     const std::map<std::string, std::string>& now);

// "training.lr 0.001 -> 0.0005" ("(none)" for a missing side).
std::string describe(const config_change& c);

}  // namespace msomni::config
