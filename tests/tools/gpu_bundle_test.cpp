// The GPU bundle (tools/gpu_bundle.sh) is self-contained, checked on the machine that made it:
// packed from this build tree, unpacked outside the source tree, every program and library in
// it resolves every shared library it loads inside the bundle or in the allow-list of what a
// base system and the GPU machine provide (allow.txt), the archive is under 60 MiB, and the
// CPU half of the GPU check (check.sh --cpu-only: the quickstart on the CPU and a bit-exact
// stop/resume) passes from the bundle with nothing from this tree.
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <doctest/doctest.h>

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using msomni::testing::parse_json;
using msomni::testing::read_text;
using msomni::testing::run_command;
using msomni::testing::temp_dir;

namespace {

std::vector<std::string> allow_patterns(const fs::path& file) {
  std::vector<std::string> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.push_back(line);
  return out;
}

bool allowed(const std::vector<std::string>& patterns, const std::string& name) {
  for (const auto& p : patterns)
    if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

bool is_elf(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

}  // namespace

TEST_CASE("the GPU bundle resolves every library inside itself or the allow-list, and its CPU check passes outside the tree") {
  if (read_text(fs::path(MSOMNI_BUILD_DIR) / "CMakeCache.txt").find("ENABLE_CUDA:BOOL=ON") == std::string::npos)
    MSOMNI_SKIP_TEST("this build tree has CUDA off (no nvcc when it was configured): there is no GPU program to bundle");
  temp_dir dir;
  const auto archive = dir.path() / "bundle.tar.xz";
  const auto packed = run_command("cd " + dir.path().string() + " && " + MSOMNI_SOURCE_DIR +
                                  "/tools/gpu_bundle.sh --reuse --build-dir " + MSOMNI_BUILD_DIR + " --out " +
                                  archive.string() + " 2>&1");
  CAPTURE(packed.output);
  REQUIRE(packed.exit_code == 0);
  REQUIRE(fs::exists(archive));
  MESSAGE("bundle: " << fs::file_size(archive) / 1024 / 1024 << " MiB");
  CHECK(fs::file_size(archive) < 60ull * 1024 * 1024);

  const auto unpacked = dir.path() / "elsewhere";
  fs::create_directories(unpacked);
  REQUIRE(run_command("tar -C " + unpacked.string() + " -xf " + archive.string()).exit_code == 0);
  const auto bundle = unpacked / "msomni-gpu-bundle";
  REQUIRE(fs::exists(bundle / "bin" / "msomni-run"));
  const auto patterns = allow_patterns(bundle / "allow.txt");
  REQUIRE(!patterns.empty());

  // Every ELF file: each library ldd names is the bundle's own or allowed by name.
  size_t elves = 0;
  for (const auto& e : fs::recursive_directory_iterator(bundle)) {
    if (!e.is_regular_file() || !is_elf(e.path())) continue;
    ++elves;
    const auto r = run_command("env -u LD_LIBRARY_PATH ldd " + e.path().string());
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string name, arrow, path;
      words >> name >> arrow >> path;
      if (name.empty() || name.find(".so") == std::string::npos) continue;
      const bool inside = arrow == "=>" && path.rfind(bundle.string(), 0) == 0;
      CAPTURE(e.path().string());
      CAPTURE(line);
      CHECK((inside || allowed(patterns, fs::path(name).filename().string())));
    }
  }
  CHECK(elves >= 9);  // seven programs and at least the libraries of CAF and UCX

  // The CPU half of the GPU check, run from the bundle with a working directory outside the
  // source tree and nothing of this tree in the environment.
  const auto out = dir.path() / "check-out";
  const auto check = run_command("cd " + unpacked.string() +
                                 " && env -u MSOMNI_RANK_BINARY -u MSOMNI_CACHE_DIR -u LD_LIBRARY_PATH " +
                                 (bundle / "check.sh").string() + " --cpu-only --steps 40 --out " + out.string() +
                                 " 2>&1");
  CAPTURE(check.output);
  CHECK(check.exit_code == 0);
  const auto summary = parse_json(read_text(out / "summary.json"));
  CHECK(summary.at("result") == "PASS");
  CHECK(summary.at("cpu_only") == true);
  std::vector<std::string> passed;
  for (const auto& c : summary.at("checks"))
    if (c.at("status") == "ok") passed.push_back(c.at("check").get<std::string>());
  CHECK(std::find(passed.begin(), passed.end(), "quickstart cpu") != passed.end());
  CHECK(std::find(passed.begin(), passed.end(), "bit-exact resume (cpu)") != passed.end());
}
