// Whole jobs on remote sources, with real processes: msomni-run trains on s3:// sources served
// by s3rver, and again through the fault proxy in front of it (503s, resets, cut bodies,
// 500s, 429s on a fixed schedule); every step sees the same samples as the same job on the
// local shards, so the per-step losses in metrics.jsonl are equal; `msomni dataset check`
// reads an s3:// uri; a store that cannot be reached is refused before anything starts.
#include "remote_io.hpp"
#include "remote_servers.hpp"
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <future>
#include <thread>

using namespace msomni;
namespace fs = std::filesystem;

namespace {

using testing::run_command;

// The shards of root/images and root/text in bucket "jobs" of `s3`, and a credentials file for
// it (the ranks read the key from there, never from the command line). Returns that file.
fs::path staged_on_s3(const fs::path& dir, const testing::s3rver_server& s3) {
  const fs::path cred = dir / "s3-credentials";
  std::ofstream(cred) << "[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n";
  fs::permissions(cred, fs::perms::owner_read | fs::perms::owner_write);
  data::remote_io_settings s;
  s.s3_endpoint = s3.url();
  s.s3_credentials_file = cred.string();
  data::set_remote_io(s);
  for (const auto* sub : {"images", "text"})
    for (const auto& e : fs::directory_iterator(dir / "data" / sub))
      REQUIRE(testing::put_object(s3.url() + "/jobs/" + sub + "/" + e.path().filename().string(), e.path()).status ==
              200);
  data::set_remote_io({});
  return cred;
}

std::string job_text(const std::string& images, const std::string& text, const std::string& io) {
  return "[job]\nname = \"remote\"\n"
         "[model]\nname = \"fuyu-tiny\"\nd_model = 32\nn_layers = 1\nn_heads = 2\nd_ff = 64\nimage_size = 16\n"
         "patch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"images\"\nuri = \"" + images + "\"\nmodality = \"image\"\nweight = 2.0\n"
         "[[data.sources]]\nname = \"text\"\nuri = \"" + text + "\"\nmodality = \"text\"\nweight = 1.0\n"
         "[training]\nglobal_batch = 4\nmicro_batch = 2\ngrad_accum = 2\nsteps = 6\nlr = 1e-3\nseed = 5\n"
         "[elasticity]\nreplicas = 1\nmin_replicas = 1\nmax_replicas = 1\n"
         "[checkpoint]\ninterval_steps = 100000\n" + io;
}

// Per step: the loss and the bad samples, from metrics.jsonl.
std::vector<std::string> steps_of(const fs::path& run) {
  std::vector<std::string> out;
  std::ifstream in(run / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    out.push_back(std::to_string(j.value("step", -1)) + " loss " + j["loss"].dump() + " bad " + j["bad_samples"].dump());
  }
  return out;
}

testing::command_result run_job(const fs::path& dir, const std::string& name, const std::string& text) {
  const fs::path cfg = dir / (name + ".toml");
  std::ofstream(cfg) << text;
  return run_command("cd / && timeout 300 " + std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --run-dir " +
               (dir / name).string());
}

}  // namespace

TEST_CASE("a job trains on s3:// sources, directly and through a faulty proxy, on the same samples as on the local shards") {
  if (const auto why = testing::s3rver_missing(); !why.empty()) MSOMNI_SKIP_TEST(why);
  testing::temp_dir dir;
  auto o = testing::tiny_dataset(dir.path() / "data");
  o.videos = 0;
  gen::write_dataset(o);
  testing::s3rver_server s3("jobs");
  const fs::path cred = staged_on_s3(dir.path(), s3);
  const auto local = run_job(dir.path(), "local",
                             job_text((dir.path() / "data" / "images").string(), (dir.path() / "data" / "text").string(), ""));
  CAPTURE(local.output);
  REQUIRE(local.exit_code == 0);
  const auto expected = steps_of(dir.path() / "local");
  REQUIRE(expected.size() == 6);

  const std::string io = "[io]\ns3_endpoint = \"" + s3.url() + "\"\ns3_credentials_file = \"" + cred.string() +
                         "\"\ncache_dir = \"" + (dir.path() / "cache").string() + "\"\ncache_bytes = 100_000_000\n";
  const auto remote = run_job(dir.path(), "s3", job_text("s3://jobs/images", "s3://jobs/text", io));
  CAPTURE(remote.output);
  REQUIRE(remote.exit_code == 0);
  CHECK(steps_of(dir.path() / "s3") == expected);
  CHECK(remote.output.find("S3RVER") == std::string::npos);

  testing::fault_options f;
  f.every = 4;
  f.faults = "503,reset,short,500,429";
  testing::fault_server proxy(s3.url(), true, f);
  const std::string faulty_io = "[io]\ns3_endpoint = \"" + proxy.url() + "\"\ns3_credentials_file = \"" + cred.string() +
                                "\"\nremote_backoff_max_ms = 100\n";
  const auto faulty = run_job(dir.path(), "faulty", job_text("s3://jobs/images", "s3://jobs/text", faulty_io));
  CAPTURE(faulty.output);
  MESSAGE("injected through the proxy: " << proxy.stats());
  REQUIRE(faulty.exit_code == 0);
  CHECK(steps_of(dir.path() / "faulty") == expected);
  const auto stats = nlohmann::json::parse(proxy.stats());
  CHECK(stats["faults"].size() == 5);  // every kind was injected at least once

  // msomni dataset check reads an s3:// uri with the AWS_* environment.
  ::setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);  // the test's environment, inherited: not on a command line
  ::setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
  const auto check = run_command("AWS_ENDPOINT_URL=" + s3.url() + " " + std::string(MSOMNI_CLI_BINARY) + " dataset check s3://jobs/images");
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  CAPTURE(check.output);
  CHECK(check.exit_code == 0);

  // A store nobody answers on: refused before anything starts, with the key and the reason.
  const std::string gone_io = "[io]\ns3_endpoint = \"http://127.0.0.1:" + std::to_string(testing::free_loopback_port()) +
                              "\"\ns3_credentials_file = \"" + cred.string() + "\"\nremote_give_up_s = 2\n";
  const auto refused = run_job(dir.path(), "gone", job_text("s3://jobs/images", "s3://jobs/text", gone_io));
  CAPTURE(refused.output);
  CHECK(refused.exit_code != 0);
  CHECK(refused.output.find("data.sources[0].uri") != std::string::npos);
  CHECK(refused.output.find("io.remote_give_up_s") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path() / "gone" / "metrics.jsonl"));
}

TEST_CASE("a job whose store goes away while it trains ends with the reason after a bounded time") {
  if (const auto why = testing::s3rver_missing(); !why.empty()) MSOMNI_SKIP_TEST(why);
  testing::temp_dir dir;
  auto o = testing::tiny_dataset(dir.path() / "data");
  o.videos = 0;
  gen::write_dataset(o);
  testing::s3rver_server s3("jobs");
  const fs::path cred = staged_on_s3(dir.path(), s3);
  testing::fault_server proxy(s3.url(), true);
  // A short read-ahead window: with the default one, runs of this tiny data set hinted for
  // many epochs ahead stay held and serve every later read, so the job would never need the
  // store again.
  const std::string io = "[io]\ns3_endpoint = \"" + proxy.url() + "\"\ns3_credentials_file = \"" + cred.string() +
                         "\"\nremote_give_up_s = 3\nremote_backoff_max_ms = 200\nremote_prefetch = 4\n";
  std::string text = job_text("s3://jobs/images", "s3://jobs/text", io);
  text.replace(text.find("steps = 6"), 9, "steps = 1000000");
  auto job = std::async(std::launch::async, [&] { return run_job(dir.path(), "cut", text); });
  const fs::path metrics = dir.path() / "cut" / "metrics.jsonl";
  for (int i = 0; i < 600 && (!fs::exists(metrics) || fs::file_size(metrics) == 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(fs::exists(metrics));
  proxy.stop();
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = job.get();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CAPTURE(r.output);
  MESSAGE("the job ended " << took << " s after its store went away");
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("io.remote_give_up_s 3") != std::string::npos);
  CHECK(took < 120);
}
