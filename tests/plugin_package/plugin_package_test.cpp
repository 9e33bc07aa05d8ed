// The installed package, used the way someone outside the tree would: `cmake --install` into
// a temporary prefix; every installed header compiles on its own; the installed example
// model plugin (share/msomni/examples/byte_bigram, built on the installed helpers) builds
// from the prefix alone as a project of its own (find_package(msomni) -> msomni::model) and
// with pkg-config msomni-model's flags on a plain compiler line; the installed msomni-run
// (which finds the installed msomni-rank next to it) checks the plugin's own keys, reports
// the plugin's model (not fuyu-tiny's shape) in --dry-run, trains it for a few steps on
// loopback and resumes it from its checkpoint.
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using msomni::testing::command_result;
using msomni::testing::run_command;

namespace {

// Programs the test starts find nothing through these: only what is installed counts.
const std::string clean_env = "env -u MSOMNI_RANK_BINARY -u MSOMNI_GEN_DATASET -u PKG_CONFIG_PATH ";

std::string job_text(const std::string& plugin, const std::string& hidden_line) {
  return "[job]\nname = \"example\"\n"
         "[model]\nname = \"example-bigram\"\nplugin = \"" + plugin + "\"\n" + hidden_line + "\n" +
         "[[data.sources]]\nname = \"text\"\nuri = \"synthetic://text\"\nmodality = \"text\"\n"
         "[training]\nglobal_batch = 4\nmicro_batch = 2\ngrad_accum = 1\nsteps = 6\nlr = 1e-2\nseed = 3\n"
         "[elasticity]\nreplicas = 2\nmin_replicas = 1\nmax_replicas = 2\n"
         "[checkpoint]\ninterval_steps = 3\nkeep = 2\n";
}

command_result run_logged(const std::string& command) {
  MESSAGE("$ " << command);
  return run_command(command);
}

}  // namespace

TEST_CASE("an installed msomni builds, checks and trains a model plugin made outside the tree") {
  msomni::testing::temp_dir dir;
  const auto prefix = dir.path() / "prefix";
  const auto install = run_logged(std::string(MSOMNI_CMAKE_COMMAND) + " --install " + MSOMNI_BUILD_DIR +
                                  " --prefix " + prefix.string());
  CAPTURE(install.output);
  REQUIRE(install.exit_code == 0);
  for (const char* program : {"msomni-run", "msomni-rank", "msomni", "msomni-agent", "msomni-sched", "msomni-gen-dataset"})
    CHECK(fs::exists(prefix / "bin" / program));
  CHECK(fs::exists(prefix / "lib/cmake/msomni/msomniConfig.cmake"));
  CHECK(fs::exists(prefix / "lib/cmake/msomni/msomniConfigVersion.cmake"));
  CHECK(fs::exists(prefix / "lib/pkgconfig/msomni-model.pc"));
  const auto example_dir = prefix / "share/msomni/examples/byte_bigram";
  for (const char* file : {"CMakeLists.txt", "byte_bigram_model.hpp", "byte_bigram_plugin.cpp"})
    CHECK(fs::exists(example_dir / file));

  // Every installed header compiles with the installed include folder alone: the
  // embedding API's include closure is installed with it.
  const auto include_dir = prefix / "include/msomni";
  int headers = 0;
  for (const auto& entry : fs::recursive_directory_iterator(include_dir)) {
    if (entry.path().extension() != ".hpp") continue;
    ++headers;
    const auto name = fs::relative(entry.path(), include_dir).string();
    const auto r = run_command("echo '#include \"" + name + "\"' | " + MSOMNI_CXX_COMPILER +
                               " -std=c++20 -Wall -Wextra -Werror -fsyntax-only -x c++ -I " + include_dir.string() + " -");
    CAPTURE(name);
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
  }
  CHECK(headers == 13);
  CHECK_FALSE(fs::exists(include_dir / "model/model_registry.hpp"));  // the host's side, not the API
  for (const char* helper : {"parameter_layout.hpp", "adamw.hpp", "flat_state.hpp", "host_model.hpp"})
    CHECK(fs::exists(include_dir / "model" / helper));

  // The installed example, a plugin project of its own, built from the installed package only.
  const auto example_build = dir.path() / "example-build";
  const auto configure = run_logged(clean_env + MSOMNI_CMAKE_COMMAND + " -S " + example_dir.string() + " -B " +
                                    example_build.string() + " -G Ninja -DCMAKE_BUILD_TYPE=Release" +
                                    " -DCMAKE_CXX_COMPILER=" + MSOMNI_CXX_COMPILER + " -DCMAKE_PREFIX_PATH=" +
                                    prefix.string());
  CAPTURE(configure.output);
  REQUIRE(configure.exit_code == 0);
  CHECK(msomni::testing::read_text(example_build / "CMakeCache.txt").find("msomni_DIR:PATH=" + (prefix / "lib/cmake/msomni").string()) !=
        std::string::npos);
  const auto build = run_logged(clean_env + MSOMNI_CMAKE_COMMAND + " --build " + example_build.string());
  CAPTURE(build.output);
  REQUIRE(build.exit_code == 0);
  const auto plugin = (example_build / "libexample_bigram.so").string();
  REQUIRE(fs::exists(plugin));

  // pkg-config names the installed headers, and a plain compiler line builds the same plugin.
  const std::string pkg_config = "env PKG_CONFIG_PATH=" + (prefix / "lib/pkgconfig").string() + " pkg-config ";
  const auto cflags = run_command(pkg_config + "--cflags msomni-model");
  CAPTURE(cflags.output);
  REQUIRE(cflags.exit_code == 0);
  REQUIRE(cflags.output.rfind("-I", 0) == 0);
  const auto flag_dir = cflags.output.substr(2, cflags.output.find_first_of(" \n") - 2);
  CHECK(fs::weakly_canonical(flag_dir) == fs::canonical(include_dir));
  CHECK(run_command(pkg_config + "--modversion msomni-model").output == "0.1.0\n");
  const auto plain_plugin = (dir.path() / "libexample_pc.so").string();
  const auto plain = run_logged(MSOMNI_CXX_COMPILER + std::string(" -std=c++20 -O1 -shared -fPIC -fvisibility=hidden $(") +
                                pkg_config + "--cflags msomni-model) " + (example_dir / "byte_bigram_plugin.cpp").string() +
                                " -o " + plain_plugin);
  CAPTURE(plain.output);
  REQUIRE(plain.exit_code == 0);

  const std::string run = clean_env + (prefix / "bin/msomni-run").string() + " ";
  const auto job = dir.write("job.toml", job_text(plugin, "example_hidden = 12"));
  const auto run_dir = (dir.path() / "run").string();

  // --dry-run loads the plugin, builds its model once and reports it; its own key reaches
  // the model (parameters: 2 x 260 x hidden + 260). The plan's model line names the plugin
  // and none of fuyu-tiny's sizes.
  auto dry = run_logged(run + job + " --dry-run --run-dir " + run_dir);
  CAPTURE(dry.output);
  CHECK(dry.exit_code == 0);
  CHECK(dry.output.find("  model:        example-bigram from " + plugin + " (its size: see model check)\n") !=
        std::string::npos);
  CHECK(dry.output.find("d_model 128") == std::string::npos);
  CHECK(dry.output.find("plugin keys:  model.example_hidden = 12, model.example_init_std = 0.1") != std::string::npos);
  CHECK(dry.output.find("model check:  example-bigram from plugin " + plugin + " (registers example-bigram)") != std::string::npos);
  CHECK(dry.output.find("6500 parameters; memory per rank") != std::string::npos);
  CHECK(dry.output.find("declares model.example_hidden: integer in [1, 256], default 16: embedding width\n") !=
        std::string::npos);
  dry = run_logged(run + job + " --dry-run --run-dir " + run_dir + " --set model.plugin=" + plain_plugin +
                   " --set model.example_hidden=8");
  CAPTURE(dry.output);
  CHECK(dry.exit_code == 0);
  CHECK(dry.output.find("4420 parameters; memory per rank") != std::string::npos);

  // A wrong model.name and an unloadable plugin are config errors naming the key.
  auto refused = run_logged(run + job + " --dry-run --run-dir " + run_dir + " --set model.name=bigram-mlp");
  CAPTURE(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("--set[1]:1:12: model.name: \"bigram-mlp\" is neither built in") != std::string::npos);
  CHECK(refused.output.find("(it registers example-bigram)") != std::string::npos);
  refused = run_logged(run + job + " --dry-run --run-dir " + run_dir + " --set model.plugin=" + job);
  CAPTURE(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("--set[1]:1:14: model.plugin: cannot load " + job) != std::string::npos);

  // A bad value of the plugin's own key, in the file: located, and nothing starts.
  const auto bad = dir.write("bad.toml", job_text(plugin, "example_hidden = 0"));
  refused = run_logged(run + bad + " --run-dir " + run_dir);
  CAPTURE(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find(bad + ":6:18: model.example_hidden: value 0 is out of range [1, 256]") != std::string::npos);
  CHECK_FALSE(fs::exists(run_dir));

  // Training: two installed msomni-rank processes on loopback run the plugin's model.
  const auto trained = run_logged(run + job + " --run-dir " + run_dir);
  CAPTURE(trained.output);
  REQUIRE(trained.exit_code == 0);
  const auto metrics = msomni::testing::read_json_lines(fs::path(run_dir) / "metrics.jsonl");
  REQUIRE(!metrics.empty());
  CHECK(metrics.back().at("step") == 6);
  for (const auto& m : metrics) {
    CAPTURE(m.dump());
    REQUIRE(m.at("loss").is_number());
    CHECK(std::isfinite(m.at("loss").get<double>()));
  }
  CHECK(msomni::testing::read_text(fs::path(run_dir) / "checkpoints" / "latest") == "step-00000006\n");

  // A longer run resumes from that checkpoint: the plugin's state (model/flat_state.hpp)
  // loads on both ranks and training goes on from step 6.
  const auto resumed = run_logged(run + job + " --run-dir " + run_dir + " --set training.steps=9");
  CAPTURE(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("warmed up with checkpoint step 6") != std::string::npos);
  const auto more = msomni::testing::read_json_lines(fs::path(run_dir) / "metrics.jsonl");
  REQUIRE(!more.empty());
  CHECK(more.back().at("step") == 9);
  CHECK(std::isfinite(more.back().at("loss").get<double>()));
  CHECK(msomni::testing::read_text(fs::path(run_dir) / "checkpoints" / "latest") == "step-00000009\n");
}
