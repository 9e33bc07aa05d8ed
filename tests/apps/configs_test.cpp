// Every file in configs/ loads, fits this machine, and dry-runs through the real binary.
#include "config/config_loader.hpp"
#include "models/torch_python.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <filesystem>

namespace fs = std::filesystem;

TEST_CASE("every config in configs/ is valid") {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(MSOMNI_SOURCE_DIR) / "configs")) {
    if (entry.path().extension() != ".toml") continue;
    ++count;
    const auto path = entry.path().string();
    CAPTURE(path);
    msomni::config::job_config cfg;
    try {
      cfg = msomni::config::load_file(path);
    } catch (const msomni::config::config_errors& e) {
      FAIL(e.what());
    }
    const auto env = msomni::config::check_environment(cfg);
    for (const auto& e : env) MESSAGE(e.to_string());
    CHECK(env.empty());
    // A torch model's dry run runs its module, which needs an interpreter with torch.
    if (cfg.model.name == "torch")
      if (const auto why = msomni::testing::torch_missing_reason(cfg.model.torch_python); !why.empty()) {
        MESSAGE("not dry-run: " << why);
        continue;
      }
    const auto r = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + path + " --dry-run");
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("dry run: configuration valid") != std::string::npos);
  }
  CHECK(count >= 2);
}

TEST_CASE("msomni-run --help exits 0 and a usage error exits 2") {
  auto r = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " --help");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("Usage: msomni-run [OPTIONS] CONFIG.toml") != std::string::npos);
  r = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " --bogus x.toml");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--bogus") != std::string::npos);
}
