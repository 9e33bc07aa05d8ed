// `msomni ckpt`: list the checkpoints in a root, verify them by loading (every checksum),
// and export one rank's weights as safetensors for other training stacks. DIR may be a run
// directory (its checkpoints/ is used), a checkpoint root, or one checkpoint directory.
// Results go to stdout; diagnostics (skipped checkpoints, refusals) to stderr.
#include "checkpoint_error.hpp"
#include "checkpoint_store.hpp"
#include "commands.hpp"
#include "safetensors.hpp"
#include "torch_module/torch_state_dict.hpp"

#include <nlohmann/json.hpp>

#include "core/command_line.hpp"
#include "core/log.hpp"

#include <iomanip>
#include <iostream>
#include <optional>

namespace msomni::cli {

namespace {

using namespace msomni::ckpt;

struct options {
  std::string dir;
  std::optional<uint64_t> step;
  uint32_t rank = 0;
  std::string out;
  std::string prefix = "param/";
};

namespace limits = config::limits;

// A checkpoint's step and a rank of it, within what a job can have.
constexpr limits::range<int64_t> step_limit{0, limits::training::steps.max};
constexpr limits::range<int64_t> rank_limit{0, limits::elasticity::replicas.max - 1};

CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& what, options& o) {
  auto* sub = app.add_subcommand(name, what);
  sub->add_option("DIR", o.dir, "a run directory, a checkpoint root, or one checkpoint directory")->required();
  return sub;
}

// Where DIR's checkpoints are: the root, and the one checkpoint when DIR is a checkpoint.
struct target {
  std::filesystem::path root;
  std::optional<uint64_t> only;
};

// A run directory holds checkpoints/ (the default checkpoint.dir); a checkpoint directory
// holds a MANIFEST and is named step-N; anything else is taken as a checkpoint root.
target resolve_target(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  if (fs::is_directory(dir / "checkpoints")) return {dir / "checkpoints", std::nullopt};
  if (fs::exists(dir / std::string(manifest_file))) {
    const auto canonical = fs::weakly_canonical(dir);
    const auto step = parse_checkpoint_dir_name(canonical.filename().string());
    if (!step)
      throw std::runtime_error(dir.string() + " holds a MANIFEST but is not named step-N, so it is no checkpoint of a root");
    return {canonical.parent_path(), step};
  }
  return {dir, std::nullopt};
}

std::string no_checkpoints(const std::filesystem::path& dir) {
  return dir.string() +
         ": no checkpoints (expected step-N directories here, in DIR/checkpoints, or a MANIFEST)";
}

void add_step(CLI::App& sub, options& o, const std::string& what) {
  sub.add_option_function<uint64_t>("--step", [&o](const uint64_t& s) { o.step = s; }, what)
      ->type_name("N")
      ->transform(command_line::within(step_limit));
}

int cmd_ls(const checkpoint_store& store, const target& t, const options& o, std::ostream& out,
           std::ostream& err) {
  const auto latest = store.latest_pointer();
  const auto listing = store.list();
  std::vector<uint64_t> steps = load_order(listing);
  if (t.only) steps = {*t.only};
  if (steps.empty()) {
    err << "msomni ckpt ls: " << no_checkpoints(o.dir) << "\n";
    return exit_failed;
  }
  out << std::left << std::setw(16) << "checkpoint" << std::setw(13) << "kind" << std::setw(7)
      << "world" << std::setw(12) << "step" << std::setw(14) << "bytes" << "note\n";
  for (uint64_t step : steps) {
    const std::string name = checkpoint_dir_name(step);
    const std::string mark = latest && *latest == name ? " (latest)" : "";
    try {
      const manifest m = store.read_manifest(step);
      uint64_t bytes = 0;
      for (const auto& s : m.shards) bytes += s.bytes;
      const std::string kind = m.kind == checkpoint_kind::full
                                   ? "full"
                                   : "incr<" + std::to_string(m.base_step) + ">";
      out << std::setw(16) << name << std::setw(13) << kind << std::setw(7) << m.meta.world_size
          << std::setw(12) << m.meta.step << std::setw(14) << bytes << "epoch " << m.meta.epoch;
      if (m.meta.micro_step != 0) out << ", micro-step " << m.meta.micro_step;
      out << mark << "\n";
    } catch (const std::exception& e) {
      out << std::setw(16) << name << "UNREADABLE: " << e.what() << mark << "\n";
    }
  }
  for (const auto& e : listing)
    if (!t.only && classify_entry(e).cls == entry_class::temporary)
      out << std::setw(16) << e.name << "temporary (removed by the next save)\n";
  return exit_ok;
}

int cmd_verify(const checkpoint_store& store, const target& t, const options& o, std::ostream& out,
               std::ostream& err) {
  const std::optional<uint64_t> only = o.step ? o.step : t.only;
  std::vector<uint64_t> steps = only ? std::vector<uint64_t>{*only} : load_order(store.list());
  if (steps.empty()) {
    err << "msomni ckpt verify: " << no_checkpoints(o.dir) << "\n";
    return exit_failed;
  }
  int bad = 0;
  for (uint64_t step : steps) {
    try {
      const auto v = store.load(step);
      uint64_t entries = 0;
      for (const auto& s : v.m.shards) entries += s.entries;
      out << "OK    " << checkpoint_dir_name(step) << ": " << v.m.shards.size() << " shards, "
          << entries << " entries, every checksum matches\n";
    } catch (const std::exception& e) {
      ++bad;
      out << "FAIL  " << checkpoint_dir_name(step) << ": " << e.what() << "\n";
    }
  }
  if (!only) {
    const auto res = store.load_latest({0});
    if (res.checkpoint)
      out << "a resume would load " << checkpoint_dir_name(res.checkpoint->m.meta.step) << "\n";
    else
      out << "nothing here is loadable\n";
  }
  return bad ? exit_failed : exit_ok;
}

// A config value as JSON: numbers, booleans and plain strings read the same in TOML and JSON;
// anything else (a TOML-only form) is kept as its TOML text.
nlohmann::json config_value(const std::string& toml_text) {
  auto v = nlohmann::json::parse(toml_text, nullptr, /*allow_exceptions=*/false);
  return v.is_discarded() ? nlohmann::json(toml_text) : v;
}

// safetensors metadata is string to string: the model config and the whole job config the
// manifest records are JSON objects in one string each (absent when the writer recorded none).
std::map<std::string, std::string> export_metadata(const manifest& m, uint32_t rank) {
  std::map<std::string, std::string> meta{{"format", "pt"},
                                          {"msomni_step", std::to_string(m.meta.step)},
                                          {"msomni_rank", std::to_string(rank)},
                                          {"msomni_world_size", std::to_string(m.meta.world_size)},
                                          {"msomni_config_hash", hex64(m.meta.config_hash)}};
  if (m.meta.config.empty()) return meta;
  nlohmann::json model = nlohmann::json::object(), all = nlohmann::json::object();
  for (const auto& [key, value] : m.meta.config) {
    all[key] = config_value(value);
    if (key.rfind("model.", 0) == 0) model[key.substr(6)] = config_value(value);
  }
  meta["msomni_model_config"] = model.dump();
  meta["msomni_config"] = all.dump();
  return meta;
}

// A torch module's checkpoint (model.name = "torch"): the state_dict entries that are not
// parameters (tied names, persistent buffers; torch_state_dict.hpp), so that with the
// parameters the file loads into the module with load_state_dict(strict=True).
std::vector<raw_tensor> rest_of_torch_state_dict(const rank_state& s) {
  std::vector<raw_tensor> out;
  if (const auto* a = s.find_blob(models::torch_aliases_blob))
    for (const auto& [alias, name] : models::read_torch_aliases(a->bytes)) {
      const auto* t = s.find_tensor("param/" + name);
      if (!t) throw checkpoint_error("export: '" + alias + "' is tied to 'param/" + name + "', which the checkpoint lacks");
      const auto* bytes = reinterpret_cast<const uint8_t*>(t->values.data());
      out.push_back({alias, "F32", t->shape, std::vector<uint8_t>(bytes, bytes + t->values.size() * sizeof(float))});
    }
  if (const auto* b = s.find_blob(models::torch_buffers_blob))
    for (auto& e : models::read_torch_buffers(b->bytes))
      out.push_back({std::move(e.name), std::move(e.dtype), std::move(e.shape), std::move(e.bytes)});
  return out;
}

int cmd_export(const checkpoint_store& store, const target& t, const options& o, std::ostream& out,
               std::ostream& err) {
  verified_checkpoint v;
  if (const auto only = o.step ? o.step : t.only) {
    v = store.load(*only, {o.rank});
  } else {
    auto res = store.load_latest({o.rank});
    for (const auto& s : res.skipped) err << "skipped " << s << "\n";
    if (!res.checkpoint) {
      err << "msomni ckpt export: " << (res.skipped.empty() ? no_checkpoints(o.dir) : "no loadable checkpoint in " + store.root().string()) << "\n";
      return exit_failed;
    }
    v = std::move(*res.checkpoint);
  }
  if (o.rank >= v.ranks.size()) {
    err << "msomni ckpt export: rank " << o.rank << " outside world size " << v.ranks.size() << "\n";
    return exit_usage;
  }
  const auto& state = v.ranks[o.rank];
  const auto rest = o.prefix == "param/" ? rest_of_torch_state_dict(state) : std::vector<raw_tensor>{};
  const auto sum = export_safetensors(state, o.prefix, o.out, export_metadata(v.m, o.rank), rest);
  out << "exported " << sum.tensors << " tensors (" << sum.data_bytes << " bytes) of "
      << checkpoint_dir_name(v.m.meta.step) << " rank " << o.rank << " to " << o.out << "\n";
  return exit_ok;
}

}  // namespace

int run_ckpt(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  options o;
  CLI::App app{"List, verify and export checkpoints.", "msomni ckpt"};
  command_line::set_conventions(app);
  app.require_subcommand(1);
  auto* ls = add_command(app, "ls", "list the checkpoints and temporaries in DIR", o);
  auto* verify = add_command(app, "verify", "load every shard and check every checksum; exit 1 on any failure", o);
  add_step(*verify, o, "only this checkpoint (default: all)");
  auto* exp = add_command(app, "export",
                          "write the tensors named PREFIX* of one rank of a checkpoint as a safetensors file, "
                          "names without the prefix (a torch model's param/: its whole state_dict)",
                          o);
  exp->add_option("--out", o.out, "the safetensors file")->type_name("FILE")->required();
  add_step(*exp, o, "this checkpoint (default: the newest loadable one)");
  command_line::add_number(*exp, "--rank", o.rank, rank_limit, "the rank whose tensors are written");
  exp->add_option("--prefix", o.prefix, "which tensors: those whose names start with it")->capture_default_str();
  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;
  const std::string verb = ls->parsed() ? "ls" : verify->parsed() ? "verify" : "export";
  try {
    if (!std::filesystem::is_directory(o.dir)) {
      err << "msomni ckpt: " << o.dir << " is not a directory\n";
      return exit_failed;
    }
    // The command's own lines say what failed; the store's fallback notes would repeat them.
    if (!log::enabled(log::level::debug)) log::set_level(log::level::error);
    const target t = resolve_target(o.dir);
    const checkpoint_store store(t.root);
    if (ls->parsed()) return cmd_ls(store, t, o, out, err);
    if (verify->parsed()) return cmd_verify(store, t, o, out, err);
    return cmd_export(store, t, o, out, err);
  } catch (const std::exception& e) {
    err << "msomni ckpt " << verb << ": " << e.what() << "\n";
    return exit_failed;
  }
}

}  // namespace msomni::cli
