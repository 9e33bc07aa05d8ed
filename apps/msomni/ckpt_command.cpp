// `msomni ckpt`: list the checkpoints in a root, verify them by loading (every checksum),
// and export one rank's weights as safetensors for other training stacks.
#include "checkpoint_store.hpp"
#include "commands.hpp"
#include "safetensors.hpp"

#include "core/command_line.hpp"

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
  sub->add_option("DIR", o.dir, "the checkpoint root")->required();
  return sub;
}

void add_step(CLI::App& sub, options& o, const std::string& what) {
  sub.add_option_function<uint64_t>("--step", [&o](const uint64_t& s) { o.step = s; }, what)
      ->type_name("N")
      ->transform(command_line::within(step_limit));
}

int cmd_ls(const checkpoint_store& store, std::ostream& out) {
  const auto latest = store.latest_pointer();
  const auto listing = store.list();
  out << std::left << std::setw(16) << "checkpoint" << std::setw(13) << "kind" << std::setw(7)
      << "world" << std::setw(12) << "step" << std::setw(14) << "bytes" << "note\n";
  for (uint64_t step : load_order(listing)) {
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
          << std::setw(12) << (std::to_string(m.meta.step) + "." + std::to_string(m.meta.micro_step))
          << std::setw(14) << bytes << "epoch " << m.meta.epoch << mark << "\n";
    } catch (const std::exception& e) {
      out << std::setw(16) << name << "UNREADABLE: " << e.what() << mark << "\n";
    }
  }
  for (const auto& e : listing)
    if (classify_entry(e).cls == entry_class::temporary)
      out << std::setw(16) << e.name << "temporary (removed by the next save)\n";
  return exit_ok;
}

int cmd_verify(const checkpoint_store& store, const options& o, std::ostream& out) {
  std::vector<uint64_t> steps = o.step ? std::vector<uint64_t>{*o.step} : load_order(store.list());
  if (steps.empty()) {
    out << store.root().string() << ": no checkpoints\n";
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
  if (!o.step) {
    const auto res = store.load_latest({0});
    if (res.checkpoint)
      out << "a resume would load " << checkpoint_dir_name(res.checkpoint->m.meta.step) << "\n";
    else
      out << "nothing here is loadable\n";
  }
  return bad ? exit_failed : exit_ok;
}

int cmd_export(const checkpoint_store& store, const options& o, std::ostream& out,
               std::ostream& err) {
  verified_checkpoint v;
  if (o.step) {
    v = store.load(*o.step, {o.rank});
  } else {
    auto res = store.load_latest({o.rank});
    for (const auto& s : res.skipped) err << "skipped " << s << "\n";
    if (!res.checkpoint) {
      err << "msomni ckpt export: no loadable checkpoint in " << store.root().string() << "\n";
      return exit_failed;
    }
    v = std::move(*res.checkpoint);
  }
  if (o.rank >= v.ranks.size()) {
    err << "msomni ckpt export: rank " << o.rank << " outside world size " << v.ranks.size() << "\n";
    return exit_usage;
  }
  const auto sum = export_safetensors(
      v.ranks[o.rank], o.prefix, o.out,
      {{"format", "pt"}, {"msomni_step", std::to_string(v.m.meta.step)},
       {"msomni_rank", std::to_string(o.rank)}});
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
                          "names without the prefix",
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
    const checkpoint_store store(o.dir);
    if (ls->parsed()) return cmd_ls(store, out);
    if (verify->parsed()) return cmd_verify(store, o, out);
    return cmd_export(store, o, out, err);
  } catch (const std::exception& e) {
    err << "msomni ckpt " << verb << ": " << e.what() << "\n";
    return exit_failed;
  }
}

}  // namespace msomni::cli
