// load_file / load_string: parse, apply --set, read the schema, and report every error.
#include "config/config_loader.hpp"

#include "config/config_overrides.hpp"
#include "config/config_schema.hpp"

#include <fstream>
#include <sstream>

namespace msomni::config {

namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

// A TOML syntax error knows no key; recover the nearest one from the text so the message
// still says FILE:LINE:COL: key.path: reason.
std::string key_near(std::string_view text, uint32_t line) {
  std::istringstream in{std::string(text)};
  std::string row, section, key;
  for (uint32_t n = 1; std::getline(in, row) && n <= line; ++n) {
    const auto t = trim(row);
    if (t.rfind("[[", 0) == 0 && t.find("]]") != std::string::npos)
      section = trim(t.substr(2, t.find("]]") - 2)), key.clear();
    else if (t.rfind('[', 0) == 0 && t.find(']') != std::string::npos)
      section = trim(t.substr(1, t.find(']') - 1)), key.clear();
    if (n == line) {
      const auto eq = t.find('=');
      if (eq != std::string::npos && t.front() != '[') key = trim(t.substr(0, eq));
    }
  }
  if (section.empty() && key.empty()) return "(document)";
  if (section.empty()) return key;
  if (key.empty()) return section;
  return section + "." + key;
}

job_config load_parsed(toml::table& root, const std::string& source,
                       const std::vector<std::string>& overrides, reader_context& ctx) {
  apply_overrides(root, overrides, ctx);
  job_config cfg;
  cfg.source_path = source;
  read_schema(root, ctx, cfg);
  if (!ctx.errors().empty()) throw config_errors(std::move(ctx.errors()));
  cfg.defaults_filled = std::move(ctx.defaults());
  cfg.resolved_values = std::move(ctx.values());
  for (auto& [key, loc] : ctx.read_locations())
    cfg.key_locations[key] = loc.file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
  return cfg;
}

toml::table parse_or_throw(std::string_view text, const std::string& source, reader_context& ctx) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto line = e.source().begin.line;
    ctx.fail_at({source, line, e.source().begin.column}, key_near(text, line),
                "syntax error: " + std::string(e.description()));
    throw config_errors(std::move(ctx.errors()));
  }
}

job_config parse_and_load(std::string_view text, const std::string& source,
                          const std::vector<std::string>& overrides) {
  reader_context ctx(source);
  toml::table root = parse_or_throw(text, source, ctx);
  return load_parsed(root, source, overrides, ctx);
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_errors({config_error{path, 0, 0, "(file)", "cannot open the config file"}});
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

namespace {

void append_hex(std::string& out, const char* prefix, uint32_t v, int digits) {
  static const char* hex = "0123456789abcdef";
  out += prefix;
  for (int d = digits - 1; d >= 0; --d) out += hex[(v >> (4 * d)) & 15];
}

// The length of the UTF-8 sequence at s[i] and its code point; 0 when it is not valid UTF-8
// (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, truncated).
size_t utf8_at(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  const size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k)
    if ((b(k) & 0xc0) != 0x80) return 0;
  if ((c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) >= 0xa0) || (c == 0xf0 && b(1) < 0x90) || (c == 0xf4 && b(1) > 0x8f))
    return 0;
  cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (b(k) & 0x3f);
  return len;
}

bool invisible_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0x200e || cp == 0x200f || cp == 0x2028 ||
         cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string escape_for_terminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      append_hex(out, "\\x", c, 2);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (uint32_t cp = 0; const size_t len = utf8_at(text, i, cp)) {
      if (invisible_control(cp)) append_hex(out, "\\u", cp, 4);
      else out.append(text.substr(i, len));
      i += len;
    } else {
      append_hex(out, "\\x", c, 2);
      ++i;
    }
  }
  return out;
}

std::string config_error::to_string() const {
  return escape_for_terminal(file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
         escape_for_terminal(key) + ": " + escape_for_terminal(reason);
}

namespace {
std::string join_errors(const std::vector<config_error>& errors) {
  std::string out;
  for (const auto& e : errors) out += e.to_string() + "\n";
  return out;
}
}  // namespace

config_errors::config_errors(std::vector<config_error> errors)
    : std::runtime_error(join_errors(errors)), errors_(std::move(errors)) {}

job_config load_file(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_and_load(read_whole(path), path, overrides);
}

scheduler_section load_scheduler_file(const std::string& path) {
  const std::string text = read_whole(path);
  reader_context ctx(path);
  toml::table root = parse_or_throw(text, path, ctx);
  scheduler_section s;
  read_scheduler_schema(root, ctx, s);
  if (!ctx.errors().empty()) throw config_errors(std::move(ctx.errors()));
  return s;
}

job_config load_string(std::string_view toml_text, const std::string& source_name,
                       const std::vector<std::string>& overrides) {
  return parse_and_load(toml_text, source_name, overrides);
}

}  // namespace msomni::config
