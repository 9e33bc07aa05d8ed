// --set key.path=value: parsed as TOML, grafted into the document, located for errors.
#include "config/config_overrides.hpp"

#include <cctype>
#include <optional>

namespace msomni::config {

namespace {

struct path_segment {
  std::string name;
  std::optional<size_t> index;
};

bool valid_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// "data.sources[1].weight" -> {data}, {sources,1}, {weight}
std::optional<std::vector<path_segment>> split_path(std::string_view key) {
  std::vector<path_segment> out;
  size_t start = 0;
  while (start <= key.size()) {
    size_t dot = key.find('.', start);
    std::string_view part = key.substr(start, dot == std::string_view::npos ? dot : dot - start);
    path_segment seg;
    if (auto br = part.find('['); br != std::string_view::npos) {
      if (part.back() != ']') return std::nullopt;
      auto digits = part.substr(br + 1, part.size() - br - 2);
      if (digits.empty()) return std::nullopt;
      size_t idx = 0;
      for (char c : digits) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
        idx = idx * 10 + static_cast<size_t>(c - '0');
      }
      seg.index = idx;
      part = part.substr(0, br);
    }
    if (!valid_name(part)) return std::nullopt;
    seg.name = std::string(part);
    out.push_back(std::move(seg));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

bool looks_structured(std::string_view v) {
  return !v.empty() && (v.front() == '[' || v.front() == '{' || v.front() == '"' || v.front() == '\'');
}

// Parses the value text; a bare word that is not TOML becomes a string.
std::optional<toml::table> parse_value(const std::string& value, const std::string& origin,
                                       uint32_t value_column, reader_context& ctx,
                                       const std::string& key) {
  try {
    return toml::parse("v=" + value, origin);
  } catch (const toml::parse_error& e) {
    if (looks_structured(value) || value.empty()) {
      auto col = e.source().begin.column > 2 ? e.source().begin.column - 2 : 1;
      ctx.fail_at({origin, 1, value_column + col - 1}, key,
                  value.empty() ? "missing value" : "invalid value: " + std::string(e.description()));
      return std::nullopt;
    }
    toml::table t;
    t.insert("v", value);
    return t;
  }
}

}  // namespace

void apply_overrides(toml::table& root, const std::vector<std::string>& overrides,
                     reader_context& ctx) {
  for (size_t i = 0; i < overrides.size(); ++i) {
    const std::string& text = overrides[i];
    const std::string origin = "--set[" + std::to_string(i + 1) + "]";
    const auto eq = text.find('=');
    if (eq == std::string::npos) {
      ctx.fail_at({origin, 1, 1}, text, "expected key.path=value");
      continue;
    }
    const std::string key = text.substr(0, eq);
    const auto segments = split_path(key);
    if (!segments) {
      ctx.fail_at({origin, 1, 1}, key, "malformed key path (expected a.b.c or a.list[0].b)");
      continue;
    }
    const auto value_column = static_cast<uint32_t>(eq + 2);
    auto parsed = parse_value(text.substr(eq + 1), origin, value_column, ctx, key);
    if (!parsed) continue;

    // Walk to the parent table, creating tables where the document has none.
    toml::table* parent = &root;
    std::string walked;
    bool ok = true;
    for (size_t s = 0; s + 1 < segments->size() && ok; ++s) {
      const auto& seg = (*segments)[s];
      walked += (walked.empty() ? "" : ".") + seg.name;
      toml::node* child = parent->get(seg.name);
      if (!child) {
        if (seg.index) {
          ctx.fail_at({origin, 1, 1}, walked, "no such array");
          ok = false;
          break;
        }
        parent->insert(seg.name, toml::table{});
        child = parent->get(seg.name);
        ctx.add_override_location(walked, {origin, 1, 1});
      }
      if (seg.index) {
        auto* arr = child->as_array();
        walked += "[" + std::to_string(*seg.index) + "]";
        if (!arr || *seg.index >= arr->size() || !arr->get(*seg.index)->is_table()) {
          ctx.fail_at({origin, 1, 1}, walked, "no such table in array");
          ok = false;
          break;
        }
        child = arr->get(*seg.index);
      }
      if (!child->is_table()) {
        ctx.fail_at({origin, 1, 1}, walked, "is a " + type_name_of(*child) + ", not a table");
        ok = false;
        break;
      }
      parent = child->as_table();
    }
    if (!ok) continue;

    const auto& leaf = segments->back();
    if (leaf.index) {
      ctx.fail_at({origin, 1, 1}, key, "cannot replace a single array element; set the array");
      continue;
    }
    std::string full = walked.empty() ? leaf.name : walked + "." + leaf.name;
    toml::node* value = parsed->get("v");
    value->visit([&](auto&& v) { parent->insert_or_assign(leaf.name, std::move(v)); });
    ctx.add_override_location(full, {origin, 1, value_column});
  }
}

}  // namespace msomni::config
