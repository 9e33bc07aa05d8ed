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

const char* to_string(job_class c) {
  switch (c) {
    case job_class::critical: return "critical";
    case job_class::regular: return "regular";
    case job_class::best_effort: return "best_effort";
  }
  return "?";
}

std::string config_error::to_string() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + key + ": " + reason;
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
