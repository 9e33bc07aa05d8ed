// The docs cannot drift from the programs: every shell command shown in README.md and
// docs/*.md (```sh, ```bash and ```console blocks, and `$ ` lines in any block) is run, each
// block as one script in a fresh directory (configs/, tests/ and build/ linked in, the
// build's programs on PATH, a time limit), and must exit 0. A block preceded by
// `<!-- not run: REASON -->` is skipped and counted; the reason says what runs it instead.
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using msomni::testing::run_command;
namespace fs = std::filesystem;

namespace {

const fs::path source_root = fs::path(__FILE__).parent_path().parent_path().parent_path();
const fs::path build_root = fs::path(MSOMNI_RUN_BINARY).parent_path().parent_path().parent_path();

struct doc_block {
  std::string where;       // FILE:LINE of the opening fence
  std::string script;      // the commands, as a shell runs them
  std::string not_run;     // the reason given by a `not run` mark; empty: run it
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// The shell blocks of one Markdown text.
std::vector<doc_block> shell_blocks(const std::string& text, const std::string& name) {
  std::vector<doc_block> blocks;
  std::istringstream in(text);
  std::string line, last_text, lang;
  bool in_fence = false, continued = false;
  doc_block current;
  for (size_t n = 1; std::getline(in, line); ++n) {
    const std::string t = trim(line);
    if (t.rfind("```", 0) == 0) {
      if (!in_fence) {
        in_fence = true;
        lang = trim(t.substr(3));
        current = {name + ":" + std::to_string(n), "", ""};
        const std::string mark = "<!-- not run:";
        if (last_text.rfind(mark, 0) == 0)
          current.not_run = trim(last_text.substr(mark.size(), last_text.rfind("-->") - mark.size()));
      } else {
        in_fence = false;
        if (!current.script.empty()) blocks.push_back(current);
      }
      continued = false;
      continue;
    }
    if (!t.empty()) last_text = t;
    if (!in_fence) continue;
    if (lang == "sh" || lang == "bash") {
      current.script += line + "\n";
    } else if (line.rfind("$ ", 0) == 0 || continued) {
      // A console transcript: the `$ ` lines (and their continuations), not the output.
      current.script += (continued ? line : line.substr(2)) + "\n";
      continued = !t.empty() && t.back() == '\\';
    }
  }
  return blocks;
}

std::vector<doc_block> all_doc_blocks() {
  std::vector<fs::path> files{source_root / "README.md"};
  for (const auto& e : fs::directory_iterator(source_root / "docs"))
    if (e.path().extension() == ".md") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<doc_block> out;
  for (const auto& f : files) {
    auto b = shell_blocks(msomni::testing::read_text(f), fs::relative(f, source_root).string());
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

std::string programs_path() {
  std::string path;
  for (const char* dir : {"apps/msomni", "apps/msomni-run", "apps/msomni-rank", "apps/msomni-agent", "apps/msomni-sched",
                          "tools/sim", "tools/dataset_gen", "tools/memtrace"})
    path += (build_root / dir).string() + ":";
  const char* system = std::getenv("PATH");
  return path + (system ? system : "/usr/bin:/bin");
}

}  // namespace

TEST_CASE("docs: the block reader takes sh - bash and console commands and honours not-run marks") {
  const std::string text =
      "# t\n```sh\nmsomni --help\n```\n<!-- not run: needs a GPU -->\n\n```bash\nnvidia-smi\n```\n"
      "```console\n$ msomni-run a.toml \\\n    --dry-run\nplan: ...\n$ echo ok\nok\n```\n"
      "```cpp\nint x;\n```\n```\n$ msomni ckpt ls runs/x\n```\n";
  const auto b = shell_blocks(text, "t.md");
  REQUIRE(b.size() == 4);
  CHECK(b[0].script == "msomni --help\n");
  CHECK(b[0].not_run.empty());
  CHECK(b[1].not_run == "needs a GPU");
  CHECK(b[2].script == "msomni-run a.toml \\\n    --dry-run\necho ok\n");
  CHECK(b[3].script == "msomni ckpt ls runs/x\n");
  CHECK(b[3].where == "t.md:20");
}

TEST_CASE("docs: every shell command in README.md and docs/*.md runs (blocks marked not run are counted)") {
  const auto blocks = all_doc_blocks();
  size_t ran = 0, skipped = 0;
  for (const auto& b : blocks) {
    if (!b.not_run.empty()) {
      ++skipped;
      MESSAGE("not run: " << b.where << ": " << b.not_run);
      continue;
    }
    msomni::testing::temp_dir dir;
    for (const char* link : {"configs", "tests"}) fs::create_directory_symlink(source_root / link, dir.path() / link);
    fs::create_directory_symlink(build_root, dir.path() / "build");
    // Background jobs a block starts are stopped when it ends, whatever happened.
    const std::string script = dir.write("block.sh", "trap 'rc=$?; kill $(jobs -p) 2>/dev/null || true; wait; exit $rc' EXIT\nset -e\n" + b.script);
    const auto r = run_command("cd " + dir.path().string() + " && PATH=" + programs_path() +
                               " timeout -k 10 300 bash " + script);
    CAPTURE(b.where);
    CAPTURE(b.script);
    CAPTURE(r.output);
    CHECK(r.exit_code == 0);
    ++ran;
  }
  MESSAGE("ran " << ran << " shell blocks of the docs, skipped " << skipped << " marked not run");
  CHECK(ran >= 4);  // the README's dry run and control walk-through, the dataset generator, msomni-sim
}
