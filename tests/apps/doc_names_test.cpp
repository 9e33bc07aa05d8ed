// The docs name only what the programs have. README.md and docs/*.md are read for:
//  - flags: a `--flag` on a line (code block or inline code) after a program of this build
//    (msomni-run, msomni SUB [SUB], msomni-sched, ...) must be in that command's --help; an
//    inline span that is only a flag must be in some program's --help;
//  - config keys: `section.key` for the job config's sections, `--set KEY=...`, and the keys of
//    ```toml blocks under their [section] headers, must not be an unknown key to the config
//    reader (the scheduler's file reader for [scheduler]);
//  - metrics: every msomni_* name must be a metric family of the catalog (or one of its
//    _bucket/_sum/_count series), or an identifier of the sources (a CMake target, a C symbol);
//  - exit codes: "exit N" / "exit code N" / "exits N" must be one msomni-run --help lists;
//  - inspector views: docs/inspect.md's table of views must be `msomni inspect --help`'s list;
//  - paths: an inline `configs/...`, `docs/...`, `tools/...` (and the other top-level folders)
//    must exist;
//  - no claim that something is missing or planned ("not yet built", "TODO", "coming soon").
// A line `<!-- example names: A B -->` lists names a doc shows as examples of the user's own
// (a plugin's keys), `<!-- other tools' names: ... -->` flags of other programs (srun's), and
// `<!-- not program names: ... -->` words that look like a program's name but are not one (a
// pkg-config module); none of them is checked. A synthetic document shows each check can fail.
#include "support/process_runner.hpp"

#include "config/config_error.hpp"
#include "config/config_loader.hpp"
#include "metrics/metric_catalog.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using msomni::testing::read_text;
using msomni::testing::run_command;

namespace {

const fs::path source_root = fs::path(__FILE__).parent_path().parent_path().parent_path();

// The build's programs, by name.
const std::map<std::string, std::string>& programs() {
  static const std::map<std::string, std::string> p = {
      {"msomni-run", MSOMNI_RUN_BINARY},          {"msomni", MSOMNI_CLI_BINARY},
      {"msomni-agent", MSOMNI_AGENT_BINARY},      {"msomni-sched", MSOMNI_SCHED_BINARY},
      {"msomni-rank", MSOMNI_RANK_BINARY},        {"msomni-gen-dataset", MSOMNI_GEN_BINARY},
      {"msomni-health-peer", MSOMNI_PEER_BINARY}, {"msomni-sim", MSOMNI_SIM_BINARY},
      {"msomni-memtrace", MSOMNI_MEMTRACE_BINARY}};
  return p;
}

// `PROGRAM WORDS... --help`, cached; empty when it does not exit 0.
const std::string& help_of(const std::string& command) {
  static std::map<std::string, std::string> cache;
  auto it = cache.find(command);
  if (it != cache.end()) return it->second;
  const auto r = run_command(command + " --help 2>&1");
  return cache[command] = r.exit_code == 0 ? r.output : std::string();
}

// Every help text of the build: each program's, each subcommand's (two levels), and the
// tools' scripts'.
const std::string& all_helps() {
  static const std::string all = [] {
    std::string out;
    const std::function<void(const std::string&, int)> walk = [&](const std::string& command, int depth) {
      const std::string& h = help_of(command);
      out += h + "\n";
      const auto at = h.find("Subcommands:");
      if (at == std::string::npos || depth == 2) return;
      std::istringstream lines(h.substr(at));
      std::string line;
      std::getline(lines, line);
      while (std::getline(lines, line)) {
        std::smatch m;
        if (!std::regex_search(line, m, std::regex("^  ([a-z][a-z-]*)\\s"))) {
          if (line.empty()) break;
          continue;
        }
        walk(command + " " + m[1].str(), depth + 1);
      }
    };
    for (const auto& [name, bin] : programs()) walk(bin, 0);
    // The tools' scripts that take flags (others, like bootstrap.sh, act when run).
    for (const char* script : {"gpu_check.sh", "gpu_bundle.sh"})
      out += run_command("bash " + (source_root / "tools" / script).string() + " --help 2>&1").output;
    return out;
  }();
  return all;
}

bool help_has_flag(const std::string& help, const std::string& flag) {
  return std::regex_search(help, std::regex("(^|[\\s,\\[|])" + flag + "([\\s=,\\]|]|$)"));
}

const std::set<std::string> config_sections = {"job",        "model",  "data",   "training", "elasticity", "checkpoint",
                                               "memory",     "io",     "health", "control",  "cluster",    "scheduler"};

// A key is known when the reader does not call it an unknown key (a wrong value is fine here).
bool known_key(const std::string& key) {
  static std::map<std::string, bool> cache;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  static const std::string base = read_text(source_root / "configs" / "quickstart.toml");
  const auto unknown_in = [&](const msomni::config::config_errors& e) {
    for (const auto& x : e.errors())
      if (x.reason.find("unknown key") != std::string::npos || x.reason.find("no such") != std::string::npos) return true;
    return false;
  };
  bool known = true;
  try {
    msomni::config::load_string(base, (source_root / "configs" / "quickstart.toml").string(), {key + "=0"});
  } catch (const msomni::config::config_errors& e) {
    known = !unknown_in(e);
  }
  if (!known && key.rfind("scheduler.", 0) == 0) {
    const fs::path file = fs::temp_directory_path() / ("msomni-doc-names-" + std::to_string(::getpid()) + ".toml");
    std::ofstream(file) << "[scheduler]\n" << key.substr(10) << " = 0\n";
    try {
      msomni::config::load_scheduler_file(file.string());
      known = true;
    } catch (const msomni::config::config_errors& e) {
      known = !unknown_in(e);
    } catch (...) {
    }
    fs::remove(file);
  }
  return cache[key] = known;
}

// Every msomni_* identifier of the sources (targets, C symbols, metric names).
const std::set<std::string>& source_identifiers() {
  static const std::set<std::string> ids = [] {
    std::set<std::string> out;
    const std::regex id("msomni_[a-z0-9_]+");
    for (const char* dir : {"runtime", "actors", "apps", "kernels", "transport", "tools", "cmake", "tests"})
      for (auto it = fs::recursive_directory_iterator(source_root / dir); it != fs::recursive_directory_iterator(); ++it) {
        const auto ext = it->path().extension().string();
        if (!it->is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".txt" && ext != ".cmake" && ext != ".in" &&
                                       ext != ".py" && ext != ".sh"))
          continue;
        if (it->path().filename() == "doc_names_test.cpp") continue;
        const std::string text = read_text(it->path());
        for (std::sregex_iterator m(text.begin(), text.end(), id), end; m != end; ++m) out.insert(m->str());
      }
    out.insert("msomni_");  // a prefix in prose
    return out;
  }();
  return ids;
}

bool known_metric_or_identifier(const std::string& name) {
  if (msomni::metrics::find_family(name)) return true;
  if (name.back() == '_') {  // a prefix in prose ("the msomni_data_remote_* families")
    for (const auto& f : msomni::metrics::metric_catalog())
      if (std::string_view(f.name).rfind(name, 0) == 0) return true;
    return false;
  }
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0 &&
        msomni::metrics::find_family(name.substr(0, name.size() - s.size())))
      return true;
  }
  // A metric in the sources is in the catalog (a test checks it); other names are identifiers.
  return name.find("_total") == std::string::npos && name.find("_seconds") == std::string::npos &&
         source_identifiers().count(name) > 0;
}

std::set<int> exit_codes() {
  std::set<int> out;
  const std::string help = help_of(MSOMNI_RUN_BINARY);
  const auto at = help.find("exit codes:");
  if (at == std::string::npos) return out;
  const std::string tail = help.substr(at);
  const std::regex code("(^|[:;]\\s+)([0-9]+) [a-z]");
  for (std::sregex_iterator m(tail.begin(), tail.end(), code), end; m != end; ++m) out.insert(std::stoi((*m)[2]));
  return out;
}

struct finding {
  std::string where, what;
};

struct doc_line {
  size_t number;
  std::string text;
  bool code;         // inside a fenced block
  std::string lang;  // the block's language
  std::string section;  // for toml blocks: the last [section] header
};

std::vector<doc_line> lines_of(const std::string& text) {
  std::vector<doc_line> out;
  std::istringstream in(text);
  std::string line, lang, section;
  bool fence = false;
  for (size_t n = 1; std::getline(in, line); ++n) {
    const auto t = line.find_first_not_of(" \t");
    if (t != std::string::npos && line.compare(t, 3, "```") == 0) {
      fence = !fence;
      lang = fence ? line.substr(t + 3) : "";
      section.clear();
      continue;
    }
    if (fence && lang == "toml") {
      std::smatch m;
      if (std::regex_search(line, m, std::regex("^\\s*\\[\\[?([a-z_.]+)\\]\\]?"))) section = m[1];
    }
    out.push_back({n, line, fence, lang, section});
  }
  return out;
}

std::vector<std::string> inline_spans(const std::string& line) {
  std::vector<std::string> out;
  const std::regex span("`([^`]+)`");
  for (std::sregex_iterator m(line.begin(), line.end(), span), end; m != end; ++m) out.push_back((*m)[1]);
  return out;
}

// The commands of a text (a code line or an inline span): each program word with the words
// after it up to a shell separator.
void check_flags(const std::string& text, const std::string& where, const std::set<std::string>& others,
                 std::vector<finding>& out) {
  static const std::regex program("(^|[\\s(/$`])(msomni(-[a-z-]+)?)(?=\\s|$)");
  for (std::sregex_iterator m(text.begin(), text.end(), program), end; m != end; ++m) {
    const std::string name = (*m)[2];
    if (others.count(name)) continue;
    const auto p = programs().find(name);
    if (p == programs().end()) {
      out.push_back({where, "a program this build does not have: " + name});
      continue;
    }
    const size_t from = size_t(m->position(2) + m->length(2));
    size_t to = text.find_first_of("|;&`)", from);
    std::istringstream words(text.substr(from, to == std::string::npos ? std::string::npos : to - from));
    std::vector<std::string> path, flags;
    for (std::string w; words >> w;) {
      if (w.rfind("--", 0) == 0 && w.size() > 2 && std::isalpha(static_cast<unsigned char>(w[2])))
        flags.push_back(w.substr(0, w.find_first_of("=[")));
      else if (flags.empty() && path.size() < 2 && std::regex_match(w, std::regex("[a-z][a-z-]*"))) path.push_back(w);
    }
    for (const auto& flag : flags) {
      if (flag == "--help") continue;
      bool found = false;
      for (size_t k = path.size() + 1; k-- > 0 && !found;) {
        std::string command = p->second;
        for (size_t i = 0; i < k; ++i) command += " " + path[i];
        found = help_has_flag(help_of(command), flag);
      }
      if (!found && !others.count(flag)) out.push_back({where, name + ": no flag " + flag});
    }
  }
}

// A claim that a feature is not built holds when its paragraph names a `key = value` the
// config refuses as not built.
bool claim_backed(const std::vector<doc_line>& lines, ptrdiff_t at) {
  ptrdiff_t from = at, to = at;
  while (from > 0 && !lines[size_t(from - 1)].text.empty()) --from;
  while (to + 1 < ptrdiff_t(lines.size()) && !lines[size_t(to + 1)].text.empty()) ++to;
  static const std::string base = read_text(source_root / "configs" / "quickstart.toml");
  for (ptrdiff_t i = from; i <= to; ++i)
    for (const auto& s : inline_spans(lines[size_t(i)].text)) {
      std::smatch m;
      if (!std::regex_match(s, m, std::regex("([a-z_]+\\.[a-z_.]+) = (.+)"))) continue;
      try {
        msomni::config::load_string(base, "quickstart.toml", {m[1].str() + "=" + m[2].str()});
      } catch (const msomni::config::config_errors& e) {
        for (const auto& x : e.errors())
          if (x.key == m[1].str() && x.reason.find("not built") != std::string::npos) return true;
      }
    }
  return false;
}

std::vector<finding> scan(const std::string& text, const std::string& name) {
  std::vector<finding> out;
  std::set<std::string> examples;
  const auto lines = lines_of(text);
  for (const auto& l : lines) {
    std::smatch m;
    if (std::regex_search(l.text, m, std::regex("<!-- (?:example names|other tools' names|not program names): ([^>]*)-->"))) {
      std::istringstream in(m[1].str());
      for (std::string w; in >> w;) examples.insert(w);
    }
  }
  const std::regex key("^(" + [] {
    std::string alt;
    for (const auto& s : config_sections) alt += (alt.empty() ? "" : "|") + s;
    return alt;
  }() + ")\\.[a-z_][a-z0-9_]*(\\[[0-9]*\\])?(\\.[a-z_][a-z0-9_]*)*$");
  const std::regex metric("(^|[^a-z0-9_])(msomni_[a-z0-9_]+)");
  const std::regex exit_code("\\bexit(?:s| code| status)?(?: with)? ([0-9]+)\\b");
  const std::regex missing("not (?:yet )?built|not yet implemented|not implemented yet|coming soon|\\bTODO\\b|\\bTBD\\b",
                           std::regex::icase);
  const std::regex path("^(configs|docs|tools|tests|apps|actors|runtime|kernels|transport)/[A-Za-z0-9_./-]+$");
  static const std::set<int> codes = exit_codes();
  for (const auto& l : lines) {
    const std::string where = name + ":" + std::to_string(l.number);
    if (l.text.find("<!--") != std::string::npos) continue;
    const auto spans = inline_spans(l.text);
    // Flags: code lines, and inline spans (a span that is only a flag: any program's).
    if (l.code && l.lang != "toml" && l.lang != "json" && l.lang != "cpp" && l.lang != "cmake") check_flags(l.text, where, examples, out);
    for (const auto& s : spans) {
      check_flags(s, where, examples, out);
      if (std::regex_match(s, std::regex("--[a-z][a-z0-9-]*(=.*| .*)?")) && !examples.count(s)) {
        const std::string flag = s.substr(0, s.find_first_of("= "));
        if (!examples.count(flag) && !help_has_flag(all_helps(), flag))
          out.push_back({where, "no program or tool of msomni has the flag " + flag});
      }
    }
    // Config keys: inline spans, --set, and toml blocks.
    std::vector<std::string> keys;
    for (const auto& s : spans)
      if (std::regex_match(s, key)) keys.push_back(s);
    static const std::regex set_key("--set[ =]([a-z_.\\[\\]0-9]+)=");
    for (std::sregex_iterator m(l.text.begin(), l.text.end(), set_key), end; m != end; ++m)
      keys.push_back((*m)[1]);
    if (l.code && l.lang == "toml" && !l.section.empty()) {
      std::smatch m;
      if (std::regex_search(l.text, m, std::regex("^\\s*([a-z_][a-z0-9_]*)\\s*=")) &&
          config_sections.count(l.section.substr(0, l.section.find('.'))))
        keys.push_back(l.section + (l.section == "data.sources" ? "[0]" : "") + "." + m[1].str());
    }
    static const std::regex file_name(".*\\.(json|jsonl|md|toml|txt|cpp|hpp|py|sh|tar|png|log|conf|sbatch)$");
    for (const auto& k : keys)
      if (!examples.count(k) && !std::regex_match(k, file_name) && !known_key(k)) out.push_back({where, "no config key " + k});
    // Metrics and identifiers.
    for (std::sregex_iterator m(l.text.begin(), l.text.end(), metric), end; m != end; ++m)
      if (const std::string name = (*m)[2]; !examples.count(name) && !known_metric_or_identifier(name))
        out.push_back({where, "no metric (or identifier) " + name});
    // Exit codes (the prose's, not a shell's `exit` in a script).
    if (!l.code)
      for (std::sregex_iterator m(l.text.begin(), l.text.end(), exit_code), end; m != end; ++m)
        if (!codes.count(std::stoi((*m)[1]))) out.push_back({where, "no exit code " + (*m)[1].str()});
    if (std::regex_search(l.text, missing) && !claim_backed(lines, &l - lines.data()))
      out.push_back({where, "a claim that something is missing: " + l.text});
    for (const auto& s : spans)
      if (std::regex_match(s, path) && s.find_first_of("*?{<") == std::string::npos && !fs::exists(source_root / s) &&
          !fs::exists(source_root / (s + ".hpp")) && !fs::exists(source_root / (s + ".cpp")))
        out.push_back({where, "no such file in the tree: " + s});
  }
  return out;
}

std::string report(const std::vector<finding>& f) {
  std::string s;
  for (const auto& x : f) s += x.where + ": " + x.what + "\n";
  return s;
}

}  // namespace

TEST_CASE("docs: the name checks find a flag, key, metric, exit code, path and missing-feature claim that do not exist") {
  const std::string doc =
      "Run `msomni-run job.toml --no-such-flag` and `msomni status --run-dir D --also-no-flag`.\n"
      "Set `io.no_such_key` or `io.max_sample_bytes`; watch `msomni_no_such_metric_total` and `msomni_data_bad_samples_total`.\n"
      "It exits 42 when bored, and exit code 2 on bad usage.\n"
      "See `configs/no_such_config.toml` and `configs/quickstart.toml`. The frobnicator is not yet built.\n"
      "```toml\n[training]\nno_such_training_key = 1\nsteps = 10\n```\n"
      "```sh\nmsomni dataset pack --images d --out o --per-shard 2 --shard-size 9\n```\n"
      "<!-- example names: model.my_hidden -->\nA plugin reads `model.my_hidden`.\n";
  const auto f = scan(doc, "synthetic.md");
  const std::string text = report(f);
  CAPTURE(text);
  for (const char* expected : {"msomni-run: no flag --no-such-flag", "msomni: no flag --also-no-flag", "no config key io.no_such_key",
                               "no metric (or identifier) msomni_no_such_metric_total", "no exit code 42",
                               "no such file in the tree: configs/no_such_config.toml", "a claim that something is missing",
                               "no config key training.no_such_training_key", "msomni: no flag --shard-size"})
    CHECK(text.find(expected) != std::string::npos);
  CHECK(f.size() == 9);  // and nothing for the names that exist, nor the example
}

TEST_CASE("docs: README.md and docs/*.md name only flags, keys, metrics, exit codes, views and files the programs have") {
  std::vector<fs::path> files{source_root / "README.md"};
  for (const auto& e : fs::directory_iterator(source_root / "docs"))
    if (e.path().extension() == ".md") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<finding> all;
  for (const auto& f : files) {
    const auto found = scan(read_text(f), fs::relative(f, source_root).string());
    all.insert(all.end(), found.begin(), found.end());
  }
  const std::string text = report(all);
  CAPTURE(text);
  CHECK(all.empty());

  // The inspector's views as docs/inspect.md tabulates them are the program's.
  const std::string help = help_of(std::string(MSOMNI_CLI_BINARY) + " inspect");
  std::vector<std::string> program_views, doc_views;
  const std::regex from_help("([0-9]) ([a-z]) ([a-z]+)");
  const auto views_at = help.find("Views");
  REQUIRE(views_at != std::string::npos);
  const std::string views_text = help.substr(views_at);
  for (std::sregex_iterator m(views_text.begin(), views_text.end(), from_help), end; m != end; ++m)
    program_views.push_back((*m)[1].str() + " " + (*m)[2].str() + " " + (*m)[3].str());
  const std::string inspect_doc = read_text(source_root / "docs" / "inspect.md");
  const std::regex row("\\| `([0-9])` `([a-z])` \\| ([a-z]+) \\|");
  for (std::sregex_iterator m(inspect_doc.begin(), inspect_doc.end(), row), end; m != end; ++m)
    doc_views.push_back((*m)[1].str() + " " + (*m)[2].str() + " " + (*m)[3].str());
  CHECK(program_views.size() == 7);
  CHECK(doc_views == program_views);
}
