// Typed reads from a toml++ table with located errors, unknown-key detection and a record
// of every default filled in. Internal to the config loader.
#pragma once

#include "config/config_error.hpp"

#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace msomni::config {

struct source_location {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
};

// Shared state of one load: where keys came from, errors, defaults.
class reader_context {
 public:
  explicit reader_context(std::string file) : file_(std::move(file)) {}

  // Locations of values set by --set, keyed by their full key path.
  void add_override_location(std::string key, source_location where);
  source_location locate(const std::string& key, const toml::node* node) const;
  void fail(const std::string& key, const toml::node* node, std::string reason);
  void fail_at(source_location where, std::string key, std::string reason);
  void note_default(const std::string& key, const std::string& value);
  void note_read(const std::string& key, const toml::node* node);

  const std::string& file() const noexcept { return file_; }
  std::vector<config_error>& errors() noexcept { return errors_; }
  std::vector<std::string>& defaults() noexcept { return defaults_; }
  std::map<std::string, source_location>& read_locations() noexcept { return read_; }
  // Every key read or defaulted -> its value as TOML text (what the file or --set gave, or the
  // default filled in).
  std::map<std::string, std::string>& values() noexcept { return values_; }

 private:
  std::string file_;
  std::map<std::string, source_location> overrides_;
  std::map<std::string, source_location> read_;
  std::vector<config_error> errors_;
  std::vector<std::string> defaults_;
  std::map<std::string, std::string> values_;
};

// Reads the keys of one table; `table` may be null when the section is absent.
class table_reader {
 public:
  table_reader(reader_context& ctx, const toml::table* table, std::string path,
               const toml::node* anchor);

  void read(std::string_view key, int64_t& out, int64_t min, int64_t max);
  // An integer within [min, max], or the string `word`, which sets `out` to `word_value`.
  void read_integer_or_word(std::string_view key, int64_t& out, int64_t min, int64_t max, std::string_view word,
                            int64_t word_value);
  void read(std::string_view key, double& out, double min, double max);
  void read(std::string_view key, bool& out);
  void read(std::string_view key, std::string& out,
            std::initializer_list<std::string_view> allowed = {});
  void require_string(std::string_view key, std::string& out);

  template <class Enum>
  void read_enum(std::string_view key, Enum& out,
                 std::initializer_list<std::pair<std::string_view, Enum>> names) {
    std::string text;
    for (const auto& [name, value] : names)
      if (value == out) text = name;
    std::vector<std::string_view> allowed;
    for (const auto& [name, value] : names) allowed.push_back(name);
    if (!read_string_from(key, text, allowed, false)) return;
    for (const auto& [name, value] : names)
      if (name == text) out = value;
  }

  // Child tables and arrays; they count as known keys. Null when absent or mistyped.
  const toml::table* table(std::string_view key);
  const toml::array* array(std::string_view key);

  // Reports every key in the table that no read asked for.
  void finish();

  std::string key_path(std::string_view key) const;
  const toml::node* node(std::string_view key) const;
  const toml::node* anchor() const noexcept { return anchor_; }
  reader_context& context() noexcept { return ctx_; }

 private:
  bool read_string_from(std::string_view key, std::string& out,
                        const std::vector<std::string_view>& allowed, bool required);

  reader_context& ctx_;
  const toml::table* table_;
  std::string path_;
  const toml::node* anchor_;
  std::set<std::string, std::less<>> seen_;
};

std::string type_name_of(const toml::node& n);

}  // namespace msomni::config
