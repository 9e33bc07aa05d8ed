// The torch backend's [model] keys (see torch_model_keys.hpp).
#include "config/torch_model_keys.hpp"

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

namespace msomni::config {

namespace {

constexpr const char* torch_keys[] = {"torch_file", "torch_class", "torch_args", "torch_python"};
constexpr const char* fuyu_sizes[] = {"d_model", "n_layers", "n_heads", "d_ff", "vocab_size"};

// model.torch_args: an inline table, or a string holding a JSON object. Its JSON text, or
// nothing (with the error reported) when it is neither.
void read_args(table_reader& r, model_section& s) {
  auto& ctx = r.context();
  const auto path = r.key_path("torch_args");
  const auto* n = r.node("torch_args");
  if (!n || n->is_string()) {
    r.read("torch_args", s.torch_args);
    if (!n) return;
    const auto parsed = nlohmann::json::parse(s.torch_args, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      ctx.fail(path, n, "a string here must hold a JSON object (e.g. '{\"d_model\": 64}'); or write an inline table");
      return;
    }
    s.torch_args = parsed.dump();
  } else if (const auto* table = n->as_table()) {
    r.table("torch_args");
    std::ostringstream json;
    json << toml::json_formatter{*table};
    const auto parsed = nlohmann::json::parse(json.str(), nullptr, false);
    if (parsed.is_discarded()) {
      ctx.fail(path, n, "cannot be written as JSON");
      return;
    }
    s.torch_args = parsed.dump();
    ctx.note_read(path, n);
  } else {
    r.read("torch_args", s.torch_args);  // reports "expected string"
    return;
  }
  ctx.values()[path] = s.torch_args;
}

}  // namespace

void read_torch_model_keys(table_reader& r, model_section& s) {
  auto& ctx = r.context();
  auto at = [&](const char* key) { return r.node(key) ? r.node(key) : r.anchor(); };
  if (s.name != "torch") {
    // Left out, they change nothing and are not recorded; given, they are refused.
    for (const char* key : torch_keys)
      if (r.node(key)) {
        std::string ignored;
        if (std::string_view(key) == "torch_args") read_args(r, s);
        else r.read(key, ignored);
        ctx.fail(r.key_path(key), at(key), "read only when model.name = \"torch\" (model.name is \"" + s.name + "\")");
      }
    return;
  }
  r.require_string("torch_file", s.torch_file);
  r.require_string("torch_class", s.torch_class);
  read_args(r, s);
  r.read("torch_python", s.torch_python);
  if (s.torch_python.empty()) ctx.fail(r.key_path("torch_python"), at("torch_python"), "must not be empty");
  if (!s.torch_file.empty()) {
    std::filesystem::path p(s.torch_file);
    if (p.is_relative()) p = std::filesystem::path(ctx.file()).parent_path() / p;
    s.torch_file = std::filesystem::absolute(p).lexically_normal().string();
  }
  for (const char* key : fuyu_sizes)
    if (r.node(key))
      ctx.fail(r.key_path(key), r.node(key),
               "sizes fuyu-tiny only; a torch model has the size its module gives itself (set it through model.torch_args)");
  if (r.node("plugin"))
    ctx.fail(r.key_path("plugin"), r.node("plugin"),
             "model.name = \"torch\" is built in: no plugin is loaded for it (leave model.plugin out)");
}

}  // namespace msomni::config
