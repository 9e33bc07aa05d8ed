// Applies `--set key.path=value` overrides onto a parsed TOML table before validation.
#pragma once

#include "config/config_reader.hpp"

#include <string>
#include <vector>

namespace msomni::config {

// Each override is "key.path=value"; array elements are addressed as `name[i]`.
// Values are TOML literals; a bare word that is not one is taken as a string.
// Errors (syntax, bad path) are reported at "--set[N]:1:COL".
void apply_overrides(toml::table& root, const std::vector<std::string>& overrides,
                     reader_context& ctx);

}  // namespace msomni::config
