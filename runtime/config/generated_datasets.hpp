// Datasets that msomni renders itself on first use: a data source uri
// "generated://PRESET/PART" (PART = images | videos | text) names part of a seeded dataset
// that msomni-gen-dataset writes into the cache directory ($MSOMNI_CACHE_DIR, else
// $XDG_CACHE_HOME/msomni, else ~/.cache/msomni) under datasets/PRESET. Every machine renders
// the same bytes. msomni-run renders a missing one before it starts anything, and says so.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace msomni::config {

struct generated_dataset {
  std::string preset;
  std::vector<std::string> generator_args;  // msomni-gen-dataset arguments besides --out
};

// The preset of a generated:// uri, or nullopt when `uri` is not one. Throws
// std::invalid_argument with the reason for an unknown preset or part.
std::optional<generated_dataset> generated_preset(const std::string& uri);

std::filesystem::path cache_dir();
std::filesystem::path generated_dir(const std::string& preset);
// Where a generated:// uri's files are (whether or not they exist yet).
std::filesystem::path generated_path(const std::string& uri);
// True once the preset's files are complete (the generator's marker exists).
bool generated_ready(const std::string& preset);

}  // namespace msomni::config
