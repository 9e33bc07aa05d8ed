// `msomni plot RUN_DIR [--out FILE.png]`: one PNG of a run (loss, step time, tokens/s, data
// wait and world size against the step, elastic events as vertical marks). The drawing is
// msomni_plot.py's, installed beside this binary, run with Debian's /usr/bin/python3 and its
// python3-matplotlib (tools/bootstrap.sh installs it); its exit code is the command's.
#include "commands.hpp"

#include "core/command_line.hpp"
#include "core/process.hpp"
#include "core/sibling_binary.hpp"

#include <filesystem>
#include <iostream>

namespace msomni::cli {

namespace {

// Debian's interpreter, which has python3-matplotlib; the python3 first on PATH may not.
constexpr const char* plot_python = "/usr/bin/python3";

}  // namespace

int run_plot(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string run_dir, png;
  CLI::App app{"Writes a PNG of a run: loss, step time, tokens/s, data wait and world size against the step, with "
               "elastic events as vertical marks.",
               "msomni plot"};
  command_line::set_conventions(app);
  app.add_option("run_dir", run_dir, "the run directory (msomni-run's --run-dir)")->type_name("RUN_DIR")->required();
  app.add_option("--out", png, "the PNG to write (default: RUN_DIR/run.png)")->type_name("FILE.png");
  app.footer("Exit codes: 0 written; 1 nothing to plot, the PNG cannot be written, or no plotting library; 2 usage.");
  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;
  if (!std::filesystem::is_directory(run_dir)) {
    err << "msomni plot: " << run_dir << " is not a directory\n";
    return exit_usage;
  }
  std::string script;
  try {
    // Beside the binary (the build tree copies it there; `cmake --install` puts both in bin/).
    script = find_sibling_binary("MSOMNI_PLOT_SCRIPT", {"msomni_plot.py"});
  } catch (const std::exception& e) {
    err << "msomni plot: " << e.what() << "\n";
    return exit_failed;
  }
  std::vector<std::string> argv{script, run_dir};
  if (!png.empty()) argv.insert(argv.end(), {"--out", png});
  out.flush();
  try {
    process::spawn_options o;
    o.own_process_group = false;  // a Ctrl-C at the terminal reaches it too
    auto child = process::spawn(plot_python, argv, o);
    const auto status = child.wait();
    if (!status) return exit_failed;
    return status->signal ? exit_failed : status->code;  // the script says what went wrong
  } catch (const std::exception& e) {
    err << "msomni plot: " << e.what() << "\n";
    return exit_failed;
  }
}

}  // namespace msomni::cli
