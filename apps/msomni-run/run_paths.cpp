// run_paths (see run_paths.hpp).
#include "run_paths.hpp"

#include "checkpoint_policy.hpp"
#include "durable_io.hpp"

#include "config/config_loader.hpp"
#include "core/secret_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace msomni::apps {

namespace fs = std::filesystem;

namespace {

constexpr size_t foreign_shown_max = 3;

const char* marker_of(dir_role role) { return role == dir_role::run ? run_marker_file : checkpoint_marker_file; }

// The entries a run directory's own writers create (kept in step with launch_job and the
// node agent); remove_job_outputs deletes only these.
bool is_journal_file(const std::string& name) {
  return name == "metrics.jsonl" || name == "events.jsonl" || name == "attempt" || name == "control.json" ||
         name == "summary.json" || name == "summary.txt" || name == "preflight.json";
}

std::optional<std::string> read_marker(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  while (in && std::getline(in, line))
    if (line.rfind("run_id=", 0) == 0 && line.size() > 7) return line.substr(7);
  return std::nullopt;
}

fs::path normal_absolute(const fs::path& p) { return fs::absolute(p).lexically_normal(); }

// The directory as the kernel sees it (symlinks resolved) for comparing two paths.
fs::path canonical_of(const fs::path& p) {
  std::error_code ec;
  auto c = fs::weakly_canonical(p, ec);
  return ec ? p : c;
}

bool is_within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

std::string listing(const dir_facts& f) {
  std::string s;
  for (const auto& e : f.foreign_entries) s += (s.empty() ? "" : ", ") + e;
  if (f.foreign_count > f.foreign_entries.size())
    s += " and " + std::to_string(f.foreign_count - f.foreign_entries.size()) + " more";
  return s;
}

void make_private_dirs(const fs::path& dir) {
  std::vector<fs::path> missing;
  for (auto p = dir; !p.empty() && !fs::exists(p); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it)
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create " + it->string() + ": " + std::strerror(errno));
}

void write_marker(const fs::path& dir, dir_role role, const std::string& run_id, const config::job_config& cfg) {
  std::ostringstream text;
  text << (role == dir_role::run ? "msomni run directory\n" : "msomni checkpoint root\n") << "run_id=" << run_id
       << "\njob=" << cfg.job.name << "\n";
  ckpt::write_file_atomically(dir / marker_of(role), text.str(), std::string(".tmp-marker-") + std::to_string(::getpid()),
                              nullptr);
}

}  // namespace

run_paths resolve_run_paths(const config::job_config& cfg, const std::string& run_dir_flag) {
  run_paths p;
  p.run_dir = normal_absolute(run_dir_flag.empty() ? fs::path("runs") / cfg.job.name : fs::path(run_dir_flag));
  const fs::path ck(cfg.checkpoint.dir);
  p.checkpoint_dir = (ck.is_absolute() ? ck : p.run_dir / ck).lexically_normal();
  if (p.checkpoint_dir.has_filename() == false && p.checkpoint_dir != p.checkpoint_dir.root_path())
    p.checkpoint_dir = p.checkpoint_dir.parent_path();
  if (!p.run_dir.has_filename() && p.run_dir != p.run_dir.root_path()) p.run_dir = p.run_dir.parent_path();
  return p;
}

std::optional<std::string> ownership_problem(const dir_facts& f, dir_role role, const std::string& owner_run_id) {
  if (f.is_filesystem_root) return "is the file system root";
  if (f.is_home) return "is the home directory";
  if (!f.exists) return std::nullopt;
  if (!f.is_directory) return "exists and is not a directory";
  if (role == dir_role::run) {
    if (f.marker_run_id || f.foreign_count == 0) return std::nullopt;
    return "holds files msomni did not create (" + listing(f) + "; no " + run_marker_file +
           " marker); use a new or empty directory";
  }
  if (f.marker_run_id) {
    if (!owner_run_id.empty() && *f.marker_run_id == owner_run_id) return std::nullopt;
    return "belongs to another run (its " + std::string(checkpoint_marker_file) + " names run " + *f.marker_run_id +
           (owner_run_id.empty() ? ", and this run directory is new" : ", not this run's " + owner_run_id) + ")";
  }
  if (f.foreign_count == 0) return std::nullopt;
  return "holds files msomni did not create (" + listing(f) + "; no " + checkpoint_marker_file +
         " marker); use a new or empty directory";
}

dir_facts facts_of(const fs::path& dir, dir_role role) {
  dir_facts f;
  const auto canon = canonical_of(dir);
  f.is_filesystem_root = canon == canon.root_path();
  if (const char* home = std::getenv("HOME"); home && *home) f.is_home = canon == canonical_of(home);
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  f.exists = !ec && fs::exists(st);
  f.is_directory = f.exists && fs::is_directory(st);
  if (!f.is_directory) return f;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name == marker_of(role) || name == dir_lock_file) continue;
    if (f.foreign_entries.size() < foreign_shown_max) f.foreign_entries.push_back(name);
    ++f.foreign_count;
  }
  if (ec) {
    f.foreign_entries.push_back("(cannot list: " + ec.message() + ")");
    ++f.foreign_count;
  }
  f.marker_run_id = read_marker(dir / marker_of(role));
  return f;
}

std::vector<std::string> check_run_paths(const run_paths& p, const config::job_config& cfg) {
  std::vector<std::string> problems;
  const auto run = facts_of(p.run_dir, dir_role::run);
  if (auto why = ownership_problem(run, dir_role::run, ""))
    problems.push_back("run directory " + p.run_dir.string() + " " + *why);
  const auto ck_canon = canonical_of(p.checkpoint_dir), run_canon = canonical_of(p.run_dir);
  auto refuse_checkpoint_dir = [&](const std::string& why) {
    problems.push_back(config::located(cfg, "checkpoint.dir", p.checkpoint_dir.string() + " " + why).to_string());
  };
  const auto ck = facts_of(p.checkpoint_dir, dir_role::checkpoints);
  if (ck.is_filesystem_root || ck.is_home || (ck_canon != run_canon && !is_within(run_canon, ck_canon))) {
    if (auto why = ownership_problem(ck, dir_role::checkpoints, run.marker_run_id.value_or("")))
      refuse_checkpoint_dir(*why);
  } else if (ck_canon == run_canon) {
    refuse_checkpoint_dir("is the run directory itself; checkpoints need a directory of their own");
  } else {
    refuse_checkpoint_dir("contains the run directory " + p.run_dir.string());
  }
  return problems;
}

claimed_run claim_run_paths(const run_paths& p, const config::job_config& cfg) {
  make_private_dirs(p.run_dir);
  std::string why;
  auto run_lock = dir_lock::acquire(p.run_dir, why);
  if (!run_lock) throw run_paths_refused(why);
  // Checked again under the lock: another process may have claimed it since the first look.
  if (auto problems = check_run_paths(p, cfg); !problems.empty()) throw run_paths_refused(problems.front());
  const auto run = facts_of(p.run_dir, dir_role::run);
  const std::string run_id = run.marker_run_id.value_or(random_token());
  if (!run.marker_run_id) write_marker(p.run_dir, dir_role::run, run_id, cfg);
  make_private_dirs(p.checkpoint_dir);
  auto ck_lock = dir_lock::acquire(p.checkpoint_dir, why);
  if (!ck_lock) throw run_paths_refused(why);
  if (!facts_of(p.checkpoint_dir, dir_role::checkpoints).marker_run_id)
    write_marker(p.checkpoint_dir, dir_role::checkpoints, run_id, cfg);
  claimed_run c{std::move(*run_lock), std::move(*ck_lock), run_id, {}};
  for (const auto* l : {&c.run_lock, &c.checkpoint_lock})
    if (l->taken_over_from())
      c.notes.push_back("took over the lock of " + (l == &c.run_lock ? p.run_dir : p.checkpoint_dir).string() +
                        " left by " + l->taken_over_from()->describe() + ", which is gone");
  return c;
}

removal_report remove_job_outputs(const run_paths& p) {
  removal_report r;
  auto remove_entry = [&r](const fs::path& e) {
    std::error_code ec;
    r.removed += fs::remove_all(e, ec) > 0 ? 1 : 0;
    if (ec) throw std::runtime_error("cannot remove " + e.string() + ": " + ec.message());
  };
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(p.checkpoint_dir, ec)) {
    const auto name = e.path().filename().string();
    if (name == checkpoint_marker_file || name == dir_lock_file) continue;
    const auto cls = ckpt::classify_entry({name, e.is_directory()}).cls;
    if (cls == ckpt::entry_class::other) r.kept.push_back(e.path().string());
    else remove_entry(e.path());
  }
  for (const auto& e : fs::directory_iterator(p.run_dir, ec)) {
    const auto name = e.path().filename().string();
    if (is_journal_file(name) && e.is_regular_file()) remove_entry(e.path());
  }
  const auto logs = p.run_dir / "logs";
  if (fs::is_directory(logs, ec)) {
    for (const auto& e : fs::directory_iterator(logs, ec)) {
      if (e.path().extension() == ".log" && e.is_regular_file()) remove_entry(e.path());
      else r.kept.push_back(e.path().string());
    }
  }
  return r;
}

}  // namespace msomni::apps
