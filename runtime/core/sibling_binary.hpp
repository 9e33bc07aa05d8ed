// Finds another msomni program installed next to the running one: $ENV_VAR when set, else
// the first of `relative_paths` (taken from the running binary's directory) that exists.
// Build trees keep each program in its own folder, so callers list those places too.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace msomni {

inline std::string find_sibling_binary(const char* env_var, std::initializer_list<const char*> relative_paths) {
  if (const char* env = std::getenv(env_var); env && *env) return env;
  const auto here = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  for (const char* rel : relative_paths) {
    const auto candidate = (here / rel).lexically_normal();
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  throw std::runtime_error(std::string("cannot find ") + *relative_paths.begin() + " near " + here.string() + " (set " +
                           env_var + ")");
}

}  // namespace msomni
