// Typed, located reads from toml++ tables (see config_reader.hpp).
#include "config/config_reader.hpp"

#include <cmath>
#include <array>
#include <charconv>
#include <sstream>

namespace msomni::config {

namespace {

std::string format_double(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string join_allowed(const std::vector<std::string_view>& allowed) {
  std::string out;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (i) out += ", ";
    out += '"';
    out += allowed[i];
    out += '"';
  }
  return out;
}

}  // namespace

std::string type_name_of(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

void reader_context::add_override_location(std::string key, source_location where) {
  overrides_[std::move(key)] = std::move(where);
}

source_location reader_context::locate(const std::string& key, const toml::node* node) const {
  if (auto it = overrides_.find(key); it != overrides_.end()) return it->second;
  source_location loc{file_, 1, 1};
  if (node && node->source().begin.line > 0) {
    if (node->source().path) loc.file = *node->source().path;
    loc.line = node->source().begin.line;
    loc.column = node->source().begin.column;
  }
  return loc;
}

void reader_context::fail(const std::string& key, const toml::node* node, std::string reason) {
  fail_at(locate(key, node), key, std::move(reason));
}

void reader_context::fail_at(source_location where, std::string key, std::string reason) {
  errors_.push_back(config_error{std::move(where.file), where.line, where.column, std::move(key),
                                 std::move(reason)});
}

void reader_context::note_default(const std::string& key, const std::string& value) {
  defaults_.push_back(key + " = " + value);
  values_[key] = value;
}

void reader_context::note_read(const std::string& key, const toml::node* node) {
  read_[key] = locate(key, node);
  if (!node || node->is_table()) return;
  if (const auto* f = node->as_floating_point(); f && std::isfinite(f->get())) {
    // The shortest text that reads back as the same double ("0.0005", not the 17 digits a
    // --set value would otherwise print as), still a TOML float.
    std::array<char, 64> buf{};
    // Plain decimals while they stay short ("0.0005"); exponents for the rest ("1e-12").
    auto end = std::to_chars(buf.data(), buf.data() + buf.size(), f->get(), std::chars_format::fixed).ptr;
    if (end - buf.data() > 12) end = std::to_chars(buf.data(), buf.data() + buf.size(), f->get()).ptr;
    std::string t(buf.data(), end);
    if (t.find_first_of(".eE") == std::string::npos) t += ".0";
    values_[key] = t;
    return;
  }
  std::ostringstream text;
  // Basic (double-quoted) strings on one line: the form JSON readers also take.
  constexpr auto flags = toml::toml_formatter::default_flags & ~toml::format_flags::allow_literal_strings &
                         ~toml::format_flags::allow_multi_line_strings;
  text << toml::toml_formatter{*node, flags};
  values_[key] = text.str();
}

table_reader::table_reader(reader_context& ctx, const toml::table* table, std::string path,
                           const toml::node* anchor)
    : ctx_(ctx), table_(table), path_(std::move(path)), anchor_(table ? table : anchor) {}

std::string table_reader::key_path(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

const toml::node* table_reader::node(std::string_view key) const {
  return table_ ? table_->get(key) : nullptr;
}

void table_reader::read(std::string_view key, int64_t& out, int64_t min, int64_t max) {
  seen_.emplace(key);
  const auto* n = node(key);
  const auto path = key_path(key);
  if (!n) {
    ctx_.note_default(path, std::to_string(out));
    return;
  }
  ctx_.note_read(path, n);
  const auto* v = n->as_integer();
  if (!v) {
    ctx_.fail(path, n, "expected integer, got " + type_name_of(*n));
    return;
  }
  const int64_t x = v->get();
  if (x < min || x > max) {
    ctx_.fail(path, n, "value " + std::to_string(x) + " is out of range [" + std::to_string(min) +
                           ", " + std::to_string(max) + "]");
    return;
  }
  out = x;
}

void table_reader::read_integer_or_word(std::string_view key, int64_t& out, int64_t min, int64_t max,
                                        std::string_view word, int64_t word_value) {
  const auto* n = node(key);
  if (n && n->is_string()) {
    seen_.emplace(key);
    const auto path = key_path(key);
    ctx_.note_read(path, n);
    if (n->as_string()->get() == word) out = word_value;
    else
      ctx_.fail(path, n, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "] or \"" +
                             std::string(word) + "\", got \"" + n->as_string()->get() + "\"");
    return;
  }
  if (n && !n->is_integer()) {
    seen_.emplace(key);
    ctx_.note_read(key_path(key), n);
    ctx_.fail(key_path(key), n, "expected an integer or \"" + std::string(word) + "\", got " + type_name_of(*n));
    return;
  }
  read(key, out, min, max);
}

void table_reader::read(std::string_view key, double& out, double min, double max) {
  seen_.emplace(key);
  const auto* n = node(key);
  const auto path = key_path(key);
  if (!n) {
    ctx_.note_default(path, format_double(out));
    return;
  }
  ctx_.note_read(path, n);
  double x = 0;
  if (const auto* f = n->as_floating_point()) {
    x = f->get();
  } else if (const auto* i = n->as_integer()) {
    x = static_cast<double>(i->get());
  } else {
    ctx_.fail(path, n, "expected number, got " + type_name_of(*n));
    return;
  }
  if (!std::isfinite(x) || x < min || x > max) {
    ctx_.fail(path, n, "value " + format_double(x) + " is out of range [" + format_double(min) +
                           ", " + format_double(max) + "]");
    return;
  }
  out = x;
}

void table_reader::read(std::string_view key, bool& out) {
  seen_.emplace(key);
  const auto* n = node(key);
  const auto path = key_path(key);
  if (!n) {
    ctx_.note_default(path, out ? "true" : "false");
    return;
  }
  ctx_.note_read(path, n);
  const auto* v = n->as_boolean();
  if (!v) {
    ctx_.fail(path, n, "expected boolean, got " + type_name_of(*n));
    return;
  }
  out = v->get();
}

void table_reader::read(std::string_view key, std::string& out,
                        std::initializer_list<std::string_view> allowed) {
  read_string_from(key, out, std::vector<std::string_view>(allowed), false);
}

void table_reader::require_string(std::string_view key, std::string& out) {
  read_string_from(key, out, {}, true);
}

bool table_reader::read_string_from(std::string_view key, std::string& out,
                                    const std::vector<std::string_view>& allowed, bool required) {
  seen_.emplace(key);
  const auto* n = node(key);
  const auto path = key_path(key);
  if (!n) {
    if (required)
      ctx_.fail(path, anchor_, "required key is missing");
    else
      ctx_.note_default(path, "\"" + out + "\"");
    return false;
  }
  ctx_.note_read(path, n);
  const auto* v = n->as_string();
  if (!v) {
    ctx_.fail(path, n, "expected string, got " + type_name_of(*n));
    return false;
  }
  const std::string& s = v->get();
  if (!allowed.empty()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || a == s;
    if (!ok) {
      ctx_.fail(path, n, "\"" + s + "\" is not one of " + join_allowed(allowed));
      return false;
    }
  }
  if (required && s.empty()) {
    ctx_.fail(path, n, "must not be empty");
    return false;
  }
  out = s;
  return true;
}

const toml::table* table_reader::table(std::string_view key) {
  seen_.emplace(key);
  const auto* n = node(key);
  if (!n) return nullptr;
  if (!n->is_table()) {
    ctx_.fail(key_path(key), n, "expected table, got " + type_name_of(*n));
    return nullptr;
  }
  return n->as_table();
}

const toml::array* table_reader::array(std::string_view key) {
  seen_.emplace(key);
  const auto* n = node(key);
  if (!n) return nullptr;
  if (!n->is_array()) {
    ctx_.fail(key_path(key), n, "expected array, got " + type_name_of(*n));
    return nullptr;
  }
  return n->as_array();
}

void table_reader::finish() {
  if (!table_) return;
  for (const auto& [k, v] : *table_) {
    if (seen_.find(k.str()) != seen_.end()) continue;
    const auto path = key_path(k.str());
    auto where = ctx_.locate(path, &v);
    if (where.file == ctx_.file() && k.source().begin.line > 0) {
      where.line = k.source().begin.line;
      where.column = k.source().begin.column;
    }
    ctx_.fail_at(std::move(where), path, "unknown key");
  }
}

}  // namespace msomni::config
