// Which directories msomni-run may write into and delete from: the ownership rules as pure
// decisions over directory facts, the same rules on real temporary directories, and the
// one-writer lock (a second holder refused with the first's pid and host, a dead holder's
// lock taken over).
#include "run_paths.hpp"

#include "config/config_loader.hpp"
#include "core/dir_lock.hpp"
#include "core/process.hpp"
#include "support/process_runner.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <fstream>
#include <thread>

namespace fs = std::filesystem;
using namespace msomni::apps;

namespace {

constexpr const char* one_source = "[[data.sources]]\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n";

msomni::config::job_config config_with(const std::string& extra = "") {
  return msomni::config::load_string("[job]\nname = \"paths\"\n" + extra + one_source, "job.toml");
}

msomni::config::job_config config_with_name(const std::string& name) {
  std::string escaped;
  for (char c : name) escaped += c == '\t' ? std::string("\\t") : std::string(1, c);
  return msomni::config::load_string("[job]\nname = \"" + escaped + "\"\n" + one_source, "job.toml");
}

dir_facts existing_dir(size_t foreign, std::optional<std::string> marker = std::nullopt) {
  dir_facts f;
  f.exists = f.is_directory = true;
  f.foreign_count = foreign;
  for (size_t i = 0; i < foreign && i < 3; ++i) f.foreign_entries.push_back("file" + std::to_string(i));
  f.marker_run_id = std::move(marker);
  return f;
}

bool mentions(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& p : problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a directory may be used when new, empty or marked as this run's") {
  CHECK_FALSE(ownership_problem(dir_facts{}, dir_role::run, ""));
  CHECK_FALSE(ownership_problem(existing_dir(0), dir_role::run, ""));
  CHECK_FALSE(ownership_problem(existing_dir(5, "abc"), dir_role::run, ""));
  CHECK_FALSE(ownership_problem(existing_dir(5, "abc"), dir_role::checkpoints, "abc"));
  CHECK_FALSE(ownership_problem(existing_dir(0), dir_role::checkpoints, ""));
}

TEST_CASE("foreign content, another run's root, files, / and home are refused") {
  const auto foreign = ownership_problem(existing_dir(7), dir_role::run, "");
  REQUIRE(foreign);
  CHECK(foreign->find("file0, file1, file2 and 4 more") != std::string::npos);
  CHECK(ownership_problem(existing_dir(2), dir_role::checkpoints, "abc"));
  const auto other = ownership_problem(existing_dir(2, "xyz"), dir_role::checkpoints, "abc");
  REQUIRE(other);
  CHECK(other->find("belongs to another run") != std::string::npos);
  // A new run directory owns no checkpoint root yet: any marked root is someone else's.
  CHECK(ownership_problem(existing_dir(2, "xyz"), dir_role::checkpoints, ""));
  dir_facts file;
  file.exists = true;
  CHECK(*ownership_problem(file, dir_role::run, "") == "exists and is not a directory");
  dir_facts root = existing_dir(0);
  root.is_filesystem_root = true;
  CHECK(ownership_problem(root, dir_role::checkpoints, ""));
  dir_facts home = existing_dir(0);
  home.is_home = true;
  CHECK(ownership_problem(home, dir_role::run, ""));
}

TEST_CASE("checkpoint.dir may not be the run directory, contain it, or hold foreign files") {
  msomni::testing::temp_dir tmp;
  const auto run_dir = (tmp.path() / "run").string();
  auto problems_of = [&](const std::string& ckpt_dir) {
    const auto cfg = config_with("[checkpoint]\ndir = \"" + ckpt_dir + "\"\n");
    return check_run_paths(resolve_run_paths(cfg, run_dir), cfg);
  };
  CHECK(problems_of("checkpoints").empty());
  CHECK(mentions(problems_of("."), "is the run directory itself"));
  CHECK(mentions(problems_of(".."), "contains the run directory"));
  CHECK(mentions(problems_of("/"), "is the file system root"));
  fs::create_directories(tmp.path() / "sibling");
  std::ofstream(tmp.path() / "sibling" / "results.csv") << "precious\n";
  const auto sibling = problems_of("../sibling");
  CHECK(mentions(sibling, "holds files msomni did not create (results.csv"));
  CHECK(mentions(sibling, "job.toml:4:7: checkpoint.dir"));  // where the config says it
  CHECK(mentions(problems_of((tmp.path() / "sibling").string()), "results.csv"));
  std::ofstream(tmp.path() / "a-file") << "x";
  CHECK(mentions(problems_of((tmp.path() / "a-file").string()), "exists and is not a directory"));
}

TEST_CASE("claiming marks both roots, and the marks make them this run's and no other's") {
  msomni::testing::temp_dir tmp;
  const auto cfg = config_with("[checkpoint]\ndir = \"" + (tmp.path() / "ckpt").string() + "\"\n");
  const auto paths = resolve_run_paths(cfg, (tmp.path() / "run").string());
  std::string run_id;
  {
    const auto claim = claim_run_paths(paths, cfg);
    run_id = claim.run_id;
    CHECK(run_id.size() == 32);
    CHECK(fs::exists(paths.run_dir / run_marker_file));
    CHECK(fs::exists(paths.checkpoint_dir / checkpoint_marker_file));
    CHECK((fs::status(paths.run_dir).permissions() & fs::perms::others_all) == fs::perms::none);
  }
  // The same run directory again: accepted, same identity.
  CHECK(check_run_paths(paths, cfg).empty());
  CHECK(claim_run_paths(paths, cfg).run_id == run_id);
  // Another run directory pointed at the same checkpoint root: refused.
  const auto other = resolve_run_paths(cfg, (tmp.path() / "run2").string());
  CHECK(mentions(check_run_paths(other, cfg), "belongs to another run"));
}

TEST_CASE("--fresh removes only the kinds of entries msomni writes") {
  msomni::testing::temp_dir tmp;
  const auto cfg = config_with();
  const auto paths = resolve_run_paths(cfg, (tmp.path() / "run").string());
  const auto claim = claim_run_paths(paths, cfg);
  fs::create_directories(paths.checkpoint_dir / "step-00000010");
  fs::create_directories(paths.checkpoint_dir / ".tmp-step-00000020-e1");
  std::ofstream(paths.checkpoint_dir / "latest") << "step-00000010\n";
  std::ofstream(paths.checkpoint_dir / "notes.txt") << "mine, not msomni's\n";
  std::ofstream(paths.run_dir / "metrics.jsonl") << "{}\n";
  fs::create_directories(paths.run_dir / "logs");
  std::ofstream(paths.run_dir / "logs" / "rank-0.log") << "log\n";
  std::ofstream(paths.run_dir / "logs" / "keep.me") << "x\n";
  const auto r = remove_job_outputs(paths);
  CHECK(r.removed == 5);
  CHECK_FALSE(fs::exists(paths.checkpoint_dir / "step-00000010"));
  CHECK_FALSE(fs::exists(paths.checkpoint_dir / ".tmp-step-00000020-e1"));
  CHECK_FALSE(fs::exists(paths.checkpoint_dir / "latest"));
  CHECK_FALSE(fs::exists(paths.run_dir / "metrics.jsonl"));
  CHECK(fs::exists(paths.checkpoint_dir / "notes.txt"));
  CHECK(fs::exists(paths.run_dir / "logs" / "keep.me"));
  CHECK(fs::exists(paths.checkpoint_dir / checkpoint_marker_file));
  CHECK(r.kept.size() == 2);
}

TEST_CASE("one writer per directory: a second lock is refused with the holder, a dead holder's lock is taken over") {
  msomni::testing::temp_dir tmp;
  std::string why;
  {
    auto first = msomni::dir_lock::acquire(tmp.path(), why);
    REQUIRE(first);
    CHECK_FALSE(first->taken_over_from());
    CHECK_FALSE(msomni::dir_lock::acquire(tmp.path(), why));
    CHECK(why.find("in use by another msomni process: pid " + std::to_string(::getpid()) + " on host ") !=
          std::string::npos);
    const auto holder = msomni::dir_lock::holder_of(tmp.path());
    REQUIRE(holder);
    CHECK(holder->pid == ::getpid());
  }
  CHECK_FALSE(msomni::dir_lock::holder_of(tmp.path()));
  auto after_release = msomni::dir_lock::acquire(tmp.path(), why);
  REQUIRE(after_release);
  CHECK_FALSE(after_release->taken_over_from());  // an orderly release is not a takeover
  after_release.reset();

  // A child takes the lock and is killed while holding it.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  auto child = msomni::process::fork_running([&] {
    std::string w;
    auto l = msomni::dir_lock::acquire(tmp.path(), w);
    (void)!::write(ready[1], l ? "y" : "n", 1);
    ::pause();
    return 0;
  });
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  CHECK(c == 'y');
  CHECK_FALSE(msomni::dir_lock::acquire(tmp.path(), why));
  CHECK(child.signal(SIGKILL));
  CHECK(child.wait()->signal == SIGKILL);
  ::close(ready[0]);
  ::close(ready[1]);
  auto taken = msomni::dir_lock::acquire(tmp.path(), why);
  REQUIRE(taken);
  REQUIRE(taken->taken_over_from());
  CHECK(taken->taken_over_from()->pid == child.pid());
}

TEST_CASE("job.name is one plain path component") {
  for (const char* bad : {"", "..", ".", "../x", "/abs", "a/b", "-rf", ".hidden", "tab\there"}) {
    INFO("job.name = " << bad);
    try {
      (void)config_with_name(bad);
      FAIL("accepted");
    } catch (const msomni::config::config_errors& e) {
      CHECK(std::string(e.what()).find("job.name: job name") != std::string::npos);
    }
  }
  CHECK(config_with_name("pretrain-v2_run.3").job.name == "pretrain-v2_run.3");
}

TEST_CASE("msomni job refuses an id that is not one plain path component (it names the scratch directory)") {
  for (const std::string& bad : {std::string(".."), std::string("a/b"), std::string(".hidden")}) {
    const auto r = msomni::testing::run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info /nonexistent --id '" +
                                                bad + "' --class regular --gpus 1 -- true");
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("msomni job: --id: the job id ") != std::string::npos);
  }
}
