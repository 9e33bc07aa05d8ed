// `msomni ckpt`: list the checkpoints in a root, verify them by loading (every checksum),
// and export one rank's weights as safetensors for other training stacks.
#include "checkpoint_store.hpp"
#include "commands.hpp"
#include "safetensors.hpp"

#include <iomanip>
#include <iostream>
#include <optional>

namespace msomni::cli {

namespace {

using namespace msomni::ckpt;

void ckpt_usage(std::ostream& os) {
  os << "usage: msomni ckpt ls DIR\n"
        "       msomni ckpt verify DIR [--step N]\n"
        "       msomni ckpt export DIR --out FILE [--step N] [--rank R] [--prefix param/]\n"
        "ls lists checkpoints and temporaries; verify loads every shard and checks every\n"
        "checksum (all checkpoints, or one with --step; exit 1 on any failure); export\n"
        "writes the tensors named PREFIX* of one rank (default 0) of the newest loadable\n"
        "checkpoint (or --step N) as a safetensors file, names without the prefix.\n";
}

struct options {
  std::string dir;
  std::optional<uint64_t> step;
  uint32_t rank = 0;
  std::string out;
  std::string prefix = "param/";
};

bool parse(const std::vector<std::string>& a, options& o, std::ostream& err) {
  if (a.size() < 2) return false;
  o.dir = a[1];
  for (size_t i = 2; i < a.size(); i += 2) {
    if (i + 1 >= a.size()) {
      err << "msomni ckpt: " << a[i] << " needs a value\n";
      return false;
    }
    try {
      if (a[i] == "--step") o.step = std::stoull(a[i + 1]);
      else if (a[i] == "--rank") o.rank = static_cast<uint32_t>(std::stoul(a[i + 1]));
      else if (a[i] == "--out") o.out = a[i + 1];
      else if (a[i] == "--prefix") o.prefix = a[i + 1];
      else {
        err << "msomni ckpt: unknown option " << a[i] << "\n";
        return false;
      }
    } catch (const std::exception&) {
      err << "msomni ckpt: bad number for " << a[i] << ": '" << a[i + 1] << "'\n";
      return false;
    }
  }
  return true;
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
  if (o.out.empty()) {
    err << "msomni ckpt export: --out FILE is required\n";
    return exit_usage;
  }
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
  if (args.empty() || args[0] == "--help" || !parse(args, o, err)) {
    ckpt_usage(args.empty() || args[0] != "--help" ? err : out);
    return args.size() == 1 && args[0] == "--help" ? exit_ok : exit_usage;
  }
  try {
    if (!std::filesystem::is_directory(o.dir)) {
      err << "msomni ckpt: " << o.dir << " is not a directory\n";
      return exit_failed;
    }
    const checkpoint_store store(o.dir);
    if (args[0] == "ls") return cmd_ls(store, out);
    if (args[0] == "verify") return cmd_verify(store, o, out);
    if (args[0] == "export") return cmd_export(store, o, out, err);
    err << "msomni ckpt: unknown subcommand '" << args[0] << "'\n";
    ckpt_usage(err);
    return exit_usage;
  } catch (const std::exception& e) {
    err << "msomni ckpt " << args[0] << ": " << e.what() << "\n";
    return exit_failed;
  }
}

}  // namespace msomni::cli
