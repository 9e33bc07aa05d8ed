// `msomni-memtrace record` (see memtrace_record.hpp). DIR must be new or empty: the tool
// writes only there, and every trace it collects is a copy written whole (temp, fsync,
// rename), so a trace in DIR/traces is never torn. msomni-run's traces stay in DIR/run/memory.
#include "memtrace_record.hpp"

#include "core/command_line.hpp"
#include "core/json_text.hpp"
#include "core/process.hpp"
#include "core/sibling_binary.hpp"
#include "durable_io.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace msomni::memtrace {

namespace fs = std::filesystem;

namespace {

// The step traces msomni-run's memory journal wrote (not the in-step ones), sorted.
std::vector<fs::path> step_traces(const fs::path& memory_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(memory_dir, ec)) {
    const auto name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind("rank-", 0) == 0 && name.size() > 6 &&
        name.compare(name.size() - 6, 6, ".jsonl") == 0 && name.find(".in_step") == std::string::npos)
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int run_record(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string config, out_dir;
  std::vector<std::string> sets;
  CLI::App app("msomni-memtrace record: run a job for real with msomni-run and collect every rank's memory trace "
               "(docs/memory_traces.md) for msomni-memtrace eval.",
               "msomni-memtrace record");
  command_line::set_conventions(app);
  app.add_option("config", config, "the job's TOML config")->required()->type_name("CONFIG");
  app.add_option("--out", out_dir, "a new or empty directory: DIR/run (the run), DIR/traces, DIR/record.json")
      ->required()
      ->type_name("DIR");
  app.add_option("--set", sets, "a config override, as msomni-run takes it (repeatable)")->type_name("KEY=VALUE");
  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;

  const fs::path dir = fs::absolute(out_dir);
  std::error_code ec;
  if (fs::exists(dir, ec) && (!fs::is_directory(dir, ec) || !fs::is_empty(dir, ec))) {
    err << "msomni-memtrace record: " << dir.string()
        << " exists and is not an empty directory; give a new one (nothing there is touched)\n";
    return 2;
  }
  fs::create_directories(dir, ec);
  if (ec) {
    err << "msomni-memtrace record: cannot create " << dir.string() << ": " << ec.message() << "\n";
    return 1;
  }
  const auto run_dir = dir / "run";
  std::vector<std::string> argv{find_sibling_binary("MSOMNI_RUN_BINARY", {"msomni-run", "../../apps/msomni-run/msomni-run"}),
                                config, "--run-dir", run_dir.string()};
  for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
  int code = 0;
  try {
    process::spawn_options o;
    o.own_process_group = false;  // Ctrl-C reaches msomni-run too, which stops with a checkpoint
    auto run = process::spawn(argv, o);
    code = run.wait()->shell_code();
  } catch (const std::exception& e) {
    err << "msomni-memtrace record: " << e.what() << "\n";
    return 1;
  }
  const auto traces_dir = dir / "traces";
  nlohmann::ordered_json record{{"config", fs::absolute(config).string()}, {"set", sets}, {"msomni_run_exit_code", code},
                                {"run_dir", run_dir.string()}, {"traces", nlohmann::ordered_json::array()}};
  try {
    ckpt::make_dir(traces_dir, nullptr);
    for (const auto& t : step_traces(run_dir / "memory")) {
      const auto text = ckpt::read_text_file(t);
      ckpt::write_file_atomically(traces_dir / t.filename(), text,
                                  "." + t.filename().string() + ".tmp-" + std::to_string(::getpid()), nullptr);
      record["traces"].push_back((traces_dir / t.filename()).string());
    }
    ckpt::write_file_atomically(dir / "record.json", json_text(record) + "\n", ".record.json.tmp-" + std::to_string(::getpid()),
                                nullptr);
  } catch (const std::exception& e) {
    err << "msomni-memtrace record: cannot collect the traces: " << e.what() << "\n";
    return 1;
  }
  out << "msomni-memtrace record: " << record["traces"].size() << " trace(s) in " << traces_dir.string()
      << " (msomni-run exited " << code << ")\n";
  if (record["traces"].empty()) {
    err << "msomni-memtrace record: msomni-run wrote no memory trace (see " << (run_dir / "events.jsonl").string() << ")\n";
    return 1;
  }
  return code == 0 ? 0 : 1;
}

}  // namespace msomni::memtrace
