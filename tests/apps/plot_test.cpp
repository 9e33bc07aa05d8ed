// `msomni plot RUN_DIR`: a PNG of a short real run (its signature and a plausible size), and
// the refusals: no steps to plot, a run directory that does not exist.
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using msomni::testing::read_text;
using msomni::testing::run_command;

namespace {

std::string cli(const std::string& args) { return std::string(MSOMNI_CLI_BINARY) + " " + args; }

bool have_matplotlib() { return run_command("/usr/bin/python3 -c 'import matplotlib'").exit_code == 0; }

}  // namespace

TEST_CASE("msomni plot writes a PNG of a short run, and refuses a directory without steps") {
  if (!have_matplotlib()) MSOMNI_SKIP_TEST("/usr/bin/python3 has no matplotlib (tools/bootstrap.sh installs python3-matplotlib)");
  msomni::testing::temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  const auto run_dir = dir.path() / "run";
  const auto run = run_command(std::string(MSOMNI_RUN_BINARY) + " " + MSOMNI_SOURCE_DIR +
                               "/configs/quickstart.toml --set training.steps=20 --run-dir " + run_dir.string());
  REQUIRE_MESSAGE(run.exit_code == 0, run.output);

  const auto out = dir.path() / "run.png";
  const auto r = run_command(cli("plot " + run_dir.string() + " --out " + out.string()));
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("wrote " + out.string() + " (20 steps") != std::string::npos);
  const auto bytes = read_text(out);
  REQUIRE(bytes.size() > 8);
  CHECK(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  // Five panels at 1000x1100 pixels: tens of kilobytes, not a blank or a thumbnail.
  CHECK(bytes.size() > 20000);
  CHECK(bytes.size() < 2000000);
  // The default name is in the run directory.
  CHECK(run_command(cli("plot " + run_dir.string())).exit_code == 0);
  CHECK(fs::exists(run_dir / "run.png"));

  fs::create_directories(dir.path() / "empty");
  const auto none = run_command(cli("plot " + (dir.path() / "empty").string()));
  CHECK(none.exit_code == 1);
  CHECK(none.output.find("no step recorded") != std::string::npos);
  const auto missing = run_command(cli("plot " + (dir.path() / "nothing-here").string()));
  CHECK(missing.exit_code == 2);
  CHECK(run_command(cli("plot")).exit_code == 2);
  CHECK(run_command(cli("plot --help")).exit_code == 0);
}
