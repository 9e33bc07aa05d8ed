// `msomni health-check` and msomni-run's pre-flight as an operator meets them, each check
// broken for real: a missing shard, a corrupt image, a damaged latest checkpoint of a real
// run, a model too big for this machine's memory, a cluster node where nothing listens, a
// port already taken, a tiny tmpfs as the run (and checkpoint) directory (mounted by the test
// when it may mount, skipped with the reason otherwise).
#include "media_encode.hpp"
#include "scene.hpp"
#include "tar_format.hpp"

#include "core/rng.hpp"
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

namespace fs = std::filesystem;
using msomni::testing::read_text;
using msomni::testing::run_command;
using msomni::testing::temp_dir;

namespace {

const std::string cli = MSOMNI_CLI_BINARY;
const std::string run = MSOMNI_RUN_BINARY;
const fs::path source_root = fs::path(__FILE__).parent_path().parent_path().parent_path();

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// A one-rank job on the given sources (TOML of [[data.sources]] tables) and extra tables.
std::string job_text(const std::string& sources, const std::string& extra = "") {
  return "[job]\nname = \"health\"\n[model]\nd_model = 16\nn_heads = 2\nd_ff = 32\nmax_seq_len = 64\n" + sources +
         "[training]\nglobal_batch = 2\nmicro_batch = 2\nsteps = 2\nseed = 3\n"
         "[elasticity]\nreplicas = 1\nmin_replicas = 1\nmax_replicas = 1\n" + extra;
}

const std::string synthetic_source = "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n";

nlohmann::json check_json(const std::string& args, int& exit_code) {
  const auto r = run_command(cli + " health-check --json " + args + " 2>/dev/null");
  exit_code = r.exit_code;
  CAPTURE(r.output);
  const auto j = nlohmann::json::parse(r.output, nullptr, false);
  REQUIRE(!j.is_discarded());
  return j;
}

const nlohmann::json* find_check(const nlohmann::json& report, const std::string& id) {
  for (const auto& c : report["checks"])
    if (c["id"] == id) return &c;
  return nullptr;
}

std::vector<uint8_t> image(int seed) {
  msomni::gen::quiet_ffmpeg_logs();
  auto rng = msomni::rng_stream::derive(uint64_t(seed), "test.health_check");
  std::vector<uint8_t> rgb;
  msomni::gen::render(msomni::gen::random_scene(rng, false), 32, 0, 1, rgb);
  return msomni::gen::encode_image(rgb, 32, msomni::gen::image_format::png);
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A port nothing listens on now (bound, read and released).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("health-check: a healthy quickstart passes, every check passed or skipped with its reason, ids as documented") {
  temp_dir dir;
  int rc = -1;
  const auto report = check_json((source_root / "configs" / "quickstart.toml").string() + " --run-dir " +
                                     quoted(dir.path() / "run"),
                                 rc);
  CHECK(rc == 0);
  CHECK(report["verdict"] == "pass");
  CHECK(report["level"] == "quick");
  CHECK(!report["node"].get<std::string>().empty());
  const std::string doc = read_text(source_root / "docs" / "health_check.md");
  for (const char* field : {"node", "verdict", "level", "config", "checks"}) {
    CHECK(report.contains(field));
    CHECK(doc.find(std::string("`") + field + "`") != std::string::npos);
  }
  CHECK(report["checks"].size() >= 16);
  for (const auto& c : report["checks"]) {
    const std::string id = c["id"], status = c["status"], reason = c["reason"];
    CAPTURE(id);
    CAPTURE(reason);
    for (const char* field : {"id", "status", "value", "threshold", "unit", "reason", "ms"}) {
      CHECK(c.contains(field));
      CHECK(doc.find(std::string("`") + field + "`") != std::string::npos);
    }
    // Per-source ids are documented by their prefix (data.source.NAME).
    const std::string documented = std::regex_replace(id, std::regex("^(data\\.source|data\\.decode|comm\\.node)\\..*"), "$1.NAME");
    CHECK(doc.find("`" + documented + "`") != std::string::npos);
    CHECK(!reason.empty());
    CHECK((status == "pass" || status == "skipped"));
  }
  // One host (no [[cluster.nodes]], no store): the clock orders nothing across hosts.
  CHECK(find_check(report, "host.clock")->at("status") == "skipped");
  CHECK(find_check(report, "compute.gemm.parity")->at("status") == "pass");
  CHECK(find_check(report, "comm.ucx.loopback")->at("status") == "pass");
  CHECK(find_check(report, "comm.allreduce")->at("status") == "pass");
  // Nothing left behind: no run directory was created and no temporary remains.
  CHECK(!fs::exists(dir.path() / "run"));
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("health-check: --level full measures the loopback bandwidth, decodes more and reduces a million floats") {
  temp_dir dir;
  int rc = -1;
  const auto report = check_json((source_root / "configs" / "quickstart.toml").string() + " --level full --run-dir " +
                                     quoted(dir.path() / "run"),
                                 rc);
  CHECK(rc == 0);
  CHECK(report["level"] == "full");
  const auto* bw = find_check(report, "comm.ucx.bandwidth");
  REQUIRE(bw);
  CAPTURE(bw->dump());
  // A busy machine may be slow (warn); the transfer itself must have worked.
  CHECK((bw->at("status") == "pass" || bw->at("status") == "warn"));
  CHECK(bw->at("unit") == "MB/s");
  CHECK(find_check(report, "comm.allreduce")->at("reason").get<std::string>().find("1048577 floats") != std::string::npos);
  CHECK(find_check(report, "storage.write_fsync")->at("reason").get<std::string>().find("64.0 MiB") != std::string::npos);
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("health-check: exit 2 for bad usage or an unreadable config, 1 for a config the schema refuses") {
  CHECK(run_command(cli + " health-check --help").exit_code == 0);
  CHECK(run_command(cli + " health-check /nonexistent/job.toml").exit_code == 2);
  CHECK(run_command(cli + " health-check " + (source_root / "configs" / "quickstart.toml").string() + " --level slow")
            .exit_code == 2);
  temp_dir dir;
  const auto cfg = dir.write("bad.toml", job_text(synthetic_source) + "[model2]\nx = 1\n");
  int rc = -1;
  const auto report = check_json(cfg, rc);
  CHECK(rc == 1);
  REQUIRE(find_check(report, "config.schema"));
  CHECK(find_check(report, "config.schema")->at("status") == "fail");
  CHECK(find_check(report, "config.schema")->at("reason").get<std::string>().find("model2") != std::string::npos);
}

TEST_CASE("health-check: a source pattern that matches no shard fails data.source with the reason") {
  temp_dir dir;
  const auto cfg = dir.write("job.toml", job_text("[[data.sources]]\nname = \"gone\"\nuri = \"" +
                                                   (dir.path() / "shards" / "shard-00000?.tar").string() +
                                                   "\"\nmodality = \"image\"\n"));
  int rc = -1;
  const auto report = check_json(cfg + " --run-dir " + quoted(dir.path() / "run"), rc);
  CHECK(rc == 1);
  REQUIRE(find_check(report, "data.source.gone"));
  CHECK(find_check(report, "data.source.gone")->at("status") == "fail");
  CHECK(find_check(report, "data.source.gone")->at("reason").get<std::string>().find("matches no shard") !=
        std::string::npos);
  CHECK(find_check(report, "data.decode.gone")->at("status") == "skipped");
}

TEST_CASE("pre-flight: a corrupt image among good ones warns in data.decode naming it and the job starts, while a source with none that decodes fails and nothing starts") {
  temp_dir dir;
  const auto write_shard = [&](const fs::path& shards, int corrupt) {
    fs::create_directories(shards);
    msomni::data::tar_writer w((shards / "shard-000000.tar").string());
    for (int i = 0; i < 6; ++i) {
      auto img = image(i + 1);
      if (i < corrupt)
        for (size_t b = 8; b < img.size(); ++b) img[b] = uint8_t(b * 37);  // a PNG signature, then noise
      w.add("00000" + std::to_string(i) + ".png", img);
      w.add("00000" + std::to_string(i) + ".txt", bytes(i < corrupt ? "a damaged shape" : "a good shape"));
    }
    w.finish();
  };
  const fs::path shards = dir.path() / "shards";
  write_shard(shards, 1);
  const auto cfg = dir.write("job.toml", job_text("[[data.sources]]\nname = \"pics\"\nuri = \"" + shards.string() +
                                                   "\"\nmodality = \"image\"\n"));
  int rc = -1;
  const auto report = check_json(cfg + " --run-dir " + quoted(dir.path() / "probe"), rc);
  REQUIRE(find_check(report, "data.decode.pics"));
  const auto& decode = *find_check(report, "data.decode.pics");
  CHECK(decode["status"] == "warn");
  CHECK(decode["value"] == "1 decoded, 1 refused");
  CHECK(decode["reason"].get<std::string>().find("shard-000000.tar/000000") != std::string::npos);
  CHECK(decode["reason"].get<std::string>().find("corrupt_image") != std::string::npos);
  CHECK(decode["reason"].get<std::string>().find("training skips such samples") != std::string::npos);
  CHECK(report["verdict"] != "fail");

  // Training tolerates it: the job starts (the ranks' repair rule replaces the damaged sample).
  const fs::path run_dir = dir.path() / "run";
  const auto started = run_command(run + " " + cfg + " --run-dir " + quoted(run_dir));
  CAPTURE(started.output);
  CHECK(started.exit_code == 0);
  CHECK(started.output.find("data.decode.pics") != std::string::npos);  // the warning is shown
  CHECK(fs::exists(run_dir / "logs" / "rank-0.log"));

  // Every sample corrupt: nothing to train on, the pre-flight fails and nothing starts.
  const fs::path bad_shards = dir.path() / "bad-shards";
  write_shard(bad_shards, 6);
  const auto bad_cfg = dir.write("bad.toml", job_text("[[data.sources]]\nname = \"pics\"\nuri = \"" +
                                                       bad_shards.string() + "\"\nmodality = \"image\"\n"));
  const auto bad_report = check_json(bad_cfg + " --run-dir " + quoted(dir.path() / "probe2"), rc);
  CHECK(rc == 1);
  REQUIRE(find_check(bad_report, "data.decode.pics"));
  CHECK((*find_check(bad_report, "data.decode.pics"))["status"] == "fail");
  CHECK((*find_check(bad_report, "data.decode.pics"))["reason"].get<std::string>().find("none of the 6 samples tried decodes") !=
        std::string::npos);
  const fs::path bad_run = dir.path() / "bad-run";
  const auto refused = run_command(run + " " + bad_cfg + " --run-dir " + quoted(bad_run));
  CAPTURE(refused.output);
  CHECK(refused.exit_code == 3);
  CHECK(refused.output.find("pre-flight check failed; nothing was started") != std::string::npos);
  CHECK(!fs::exists(bad_run / "logs"));
  CHECK(run_command(run + " " + bad_cfg + " --dry-run --run-dir " + quoted(bad_run)).exit_code == 3);

  // Switched off, no pre-flight runs at all.
  const auto unchecked = run_command(run + " " + cfg + " --set health.preflight=off --run-dir " + quoted(dir.path() / "run2"));
  CAPTURE(unchecked.output);
  CHECK(unchecked.exit_code == 0);
  CHECK(unchecked.output.find("pre-flight") == std::string::npos);
}

namespace {

// Flips one byte in the middle of every shard file of checkpoint `step`.
void flip_shard_bytes(const fs::path& run_dir, const char* step_dir) {
  int flipped = 0;
  for (const auto& e : fs::directory_iterator(run_dir / "checkpoints" / step_dir)) {
    if (!(e.path().extension() == ".bin" || e.path().filename().string().rfind("shard", 0) == 0)) continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    const auto size = fs::file_size(e.path());
    f.seekg(std::streamoff(size / 2));
    char c = 0;
    f.read(&c, 1);
    c = char(c ^ 0x5a);
    f.seekp(std::streamoff(size / 2));
    f.write(&c, 1);
    ++flipped;
  }
  REQUIRE(flipped > 0);
}

}  // namespace

TEST_CASE("pre-flight: a damaged newest checkpoint is a warning naming the one loaded, and none verifying refuses the start") {
  temp_dir dir;
  const auto cfg = dir.write("job.toml", job_text(synthetic_source, "[checkpoint]\ninterval_steps = 1\n"));
  const fs::path run_dir = dir.path() / "run";
  const auto first = run_command(run + " " + cfg + " --run-dir " + quoted(run_dir));
  CAPTURE(first.output);
  REQUIRE(first.exit_code == 0);
  int rc = -1;
  auto report = check_json(cfg + " --run-dir " + quoted(run_dir), rc);
  CHECK(rc == 0);
  CHECK(find_check(report, "storage.checkpoint.latest")->at("status") == "pass");
  CHECK(find_check(report, "storage.checkpoint.latest")->at("value") == "2");
  CHECK(find_check(report, "storage.checkpoint.config")->at("status") == "pass");

  // One flipped byte in the newest checkpoint: the ranks load step 1, and the check says so.
  flip_shard_bytes(run_dir, "step-00000002");
  report = check_json(cfg + " --run-dir " + quoted(run_dir), rc);
  CHECK(rc == 0);
  const auto& latest = *find_check(report, "storage.checkpoint.latest");
  CHECK(latest["status"] == "warn");
  CHECK(latest["value"] == "1");
  CHECK(latest["reason"].get<std::string>().find("does not verify") != std::string::npos);
  CHECK(latest["reason"].get<std::string>().find("resumes from step 1") != std::string::npos);

  // A resume on it starts (a requeue after a crash is not stopped) and trains from step 1.
  const auto resumed = run_command(run + " " + cfg + " --set training.steps=4 --run-dir " + quoted(run_dir));
  CAPTURE(resumed.output);
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.output.find("resumes from step 1") != std::string::npos);
  CHECK(read_text(run_dir / "logs" / "rank-0.log").find("checkpoint step 1") != std::string::npos);

  // Its manifest gone and every other checkpoint damaged: nothing verifies, and a resume would
  // start over on top of them, so the start is refused before any rank starts.
  for (const auto& e : fs::directory_iterator(run_dir / "checkpoints"))
    if (e.is_directory() && e.path().filename().string().rfind("step-", 0) == 0) {
      if (e.path().filename() == "step-00000004") fs::remove(e.path() / "MANIFEST");
      else flip_shard_bytes(run_dir, e.path().filename().c_str());
    }
  report = check_json(cfg + " --run-dir " + quoted(run_dir), rc);
  CHECK(rc == 1);
  CHECK(find_check(report, "storage.checkpoint.latest")->at("status") == "fail");
  const auto lines_before = read_text(run_dir / "logs" / "rank-0.log").size();
  const auto refused = run_command(run + " " + cfg + " --set training.steps=6 --run-dir " + quoted(run_dir));
  CAPTURE(refused.output);
  CHECK(refused.exit_code == 3);
  CHECK(refused.output.find("no checkpoint verifies") != std::string::npos);
  CHECK(read_text(run_dir / "logs" / "rank-0.log").size() == lines_before);
}

TEST_CASE("health-check: a model whose estimate exceeds MemAvailable fails host.memory") {
  temp_dir dir;
  const auto cfg = dir.write("job.toml", job_text(synthetic_source));
  int rc = -1;
  const auto report = check_json(cfg + " --set model.d_model=8192 --set model.n_layers=64 --set model.d_ff=32768 "
                                       "--run-dir " + quoted(dir.path() / "run"), rc);
  CHECK(rc == 1);
  const auto& mem = *find_check(report, "host.memory");
  CHECK(mem["status"] == "fail");
  CHECK(mem["reason"].get<std::string>().find("MemAvailable cannot hold") != std::string::npos);
  CHECK(mem["unit"] == "MiB");
}

TEST_CASE("health-check: a cluster node where nothing listens on health.node_port fails comm.node") {
  temp_dir dir;
  const int port = free_port();
  const auto cfg = dir.write("job.toml", job_text(synthetic_source,
                                                  "[health]\nnode_port = " + std::to_string(port) +
                                                      "\n[[cluster.nodes]]\nname = \"far\"\nhost = \"127.0.0.9\"\nslots = 1\n"));
  int rc = -1;
  const auto report = check_json(cfg + " --run-dir " + quoted(dir.path() / "run"), rc);
  CHECK(rc == 1);
  REQUIRE(find_check(report, "comm.node.far"));
  const auto& node = *find_check(report, "comm.node.far");
  CHECK(node["status"] == "fail");
  CHECK(node["value"] == "127.0.0.9:" + std::to_string(port));
  CHECK(node["reason"].get<std::string>().find("connection refused") != std::string::npos);
}

TEST_CASE("health-check: a control port already taken fails host.port.control") {
  temp_dir dir;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  const auto cfg = dir.write("job.toml", job_text(synthetic_source, "[cluster]\ncontrol_port = " + std::to_string(port) + "\n"));
  int rc = -1;
  const auto report = check_json(cfg + " --run-dir " + quoted(dir.path() / "run"), rc);
  ::close(fd);
  CHECK(rc == 1);
  const auto& p = *find_check(report, "host.port.control");
  CHECK(p["status"] == "fail");
  CHECK(p["reason"].get<std::string>().find("is not free") != std::string::npos);
}

TEST_CASE("pre-flight: a tiny tmpfs as the checkpoint directory fails storage.free_space and msomni-run does not start") {
  temp_dir dir;
  const auto mnt = dir.path() / "tiny";
  fs::create_directories(mnt);
  // 64 KiB: less than two checkpoints of this model's parameters and optimizer state.
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") != 0)
    MSOMNI_SKIP_TEST("cannot mount a tmpfs here (" + std::string(std::strerror(errno)) + "): needs root or CAP_SYS_ADMIN");
  struct unmount_at_end {  // the mount goes before the temp dir does, whatever happens
    fs::path at;
    ~unmount_at_end() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const auto cfg = dir.write("job.toml", job_text(synthetic_source));
  const std::string model = " --set model.d_model=64 --set model.d_ff=256";
  int rc = -1;
  const auto report = check_json(cfg + model + " --run-dir " + quoted(mnt / "run"), rc);
  CHECK(rc == 1);
  REQUIRE(find_check(report, "storage.free_space"));
  const auto& space = *find_check(report, "storage.free_space");
  CHECK(space["status"] == "fail");
  CHECK(space["reason"].get<std::string>().find("not enough free space for") != std::string::npos);
  CHECK(space["unit"] == "MiB");
  // msomni-run refuses to start on it: the pre-flight's exit code, no rank log, no step.
  const auto r = run_command(run + " " + cfg + model + " --run-dir " + quoted(mnt / "run2") + " 2>&1");
  CAPTURE(r.output);
  CHECK(r.exit_code == 3);
  CHECK(r.output.find("storage.free_space") != std::string::npos);
  CHECK_FALSE(fs::exists(mnt / "run2" / "logs" / "rank-0.log"));
  CHECK_FALSE(fs::exists(mnt / "run2" / "metrics.jsonl"));
}
