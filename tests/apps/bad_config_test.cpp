// Bad configurations are refused before anything starts: msomni-run exits 2 and names
// FILE:LINE:COL: key.path: reason for each problem. Runs the real binary.
#include "support/config_text.hpp"
#include "support/process_runner.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using msomni::testing::run_command;
using msomni::testing::temp_dir;

namespace {

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return text.replace(at, from.size(), to);
}

struct bad_case {
  const char* name;
  std::string toml;
  std::vector<std::string> sets;
  std::string expected;  // "FILE:LINE:COL: key.path..." with FILE relative ("@" = the file)
};

std::vector<bad_case> cases() {
  const auto base = msomni::testing::valid_config_text();
  return {
      {"syntax error", replaced(base, "steps = 10", "steps = = 10"), {}, "@:19:9: training.steps: syntax error"},
      {"unknown key", replaced(base, "seed = 7", "sed = 7"), {}, "@:21:1: training.sed: unknown key"},
      {"unknown section", base + "\n[trainig]\nsteps = 3\n", {}, "@:28:2: trainig: unknown key"},
      {"integer given a string", replaced(base, "steps = 10", "steps = \"ten\""), {},
       "@:19:9: training.steps: expected integer, got string"},
      {"number given a boolean", replaced(base, "lr = 0.001", "lr = true"), {},
       "@:20:6: training.lr: expected number, got boolean"},
      {"integer out of range", replaced(base, "micro_batch = 2", "micro_batch = 0"), {},
       "@:17:15: training.micro_batch: value 0 is out of range [1, "},
      {"float out of range", replaced(base, "lr = 0.001", "lr = 50.0"), {},
       "@:20:6: training.lr: value 50 is out of range"},
      {"unknown enum value", replaced(base, "name = \"unit\"", "name = \"unit\"\nclass = \"vip\""), {},
       "@:3:9: job.class: \"vip\" is not one of \"critical\", \"regular\", \"best_effort\""},
      {"batch arithmetic", replaced(base, "global_batch = 8", "global_batch = 10"), {},
       "@:16:16: training.global_batch: inconsistent batch arithmetic: global_batch 10 != "
       "micro_batch 2 x grad_accum 2 x elasticity.replicas 2 = 8"},
      {"replicas outside min/max", replaced(base, "replicas = 2", "replicas = 5"), {},
       "@:24:12: elasticity.replicas: replicas 5 must lie within [min_replicas 1, max_replicas 4]"},
      {"missing required key", replaced(base, "uri = \"synthetic://text\"\n", ""), {},
       "@:10:1: data.sources[1].uri: required key is missing"},
      {"unknown modality", replaced(base, "modality = \"text\"", "modality = \"audio\""), {},
       "@:13:12: data.sources[1].modality: \"audio\" is not one of"},
      {"duplicate source name", replaced(base, "name = \"txt\"", "name = \"img\""), {},
       "@:11:8: data.sources[1].name: duplicate source name \"img\""},
      {"model shape", base + "\n[model]\nd_model = 100\nn_heads = 3\n", {},
       "@:30:11: model.n_heads: d_model 100 is not divisible by n_heads 3"},
      {"empty file", "", {}, "@:1:1: data.sources: at least one [[data.sources]] table is required"},
      {"--set unknown key", base, {"training.stepz=5"}, "--set[1]:1:16: training.stepz: unknown key"},
      {"--set wrong type", base, {"training.steps=abc"}, "--set[1]:1:16: training.steps: expected integer, got string"},
      {"--set without value", base, {"training.steps"}, "--set[1]:1:1: training.steps: expected key.path=value"},
      {"--set out of range", base, {"training.seed=1", "elasticity.max_replicas=0"},
       "--set[2]:1:25: elasticity.max_replicas: value 0 is out of range"},
      {"--set breaks batch arithmetic", base, {"training.grad_accum=3"},
       "@:16:16: training.global_batch: inconsistent batch arithmetic"},
      {"--set malformed literal", base, {"training.steps=[1,"}, "--set[1]:1:"},
      {"data path missing", replaced(base, "uri = \"synthetic://text\"", "uri = \"missing/dir\""), {},
       "@:12:7: data.sources[1].uri: path "},
      {"unsupported uri scheme", replaced(base, "uri = \"synthetic://text\"", "uri = \"gs://bucket/x\""), {},
       "@:12:7: data.sources[1].uri: unsupported scheme"},
      {"s3 source without credentials", replaced(base, "uri = \"synthetic://text\"", "uri = \"s3://bucket/x\""), {},
       "@:12:7: data.sources[1].uri: cannot read s3://bucket/x: no S3 credentials"},
      {"control store not etcd://", base + "\n[control]\nstore = \"http://127.0.0.1:2379\"\n", {},
       "@:29:9: control.store: must start with etcd://"},
      {"control store without a port", base, {"control.store=etcd://127.0.0.1:2379,host"},
       "--set[1]:1:15: control.store: \"host\" is not HOST:PORT"},
      {"lease out of range", base, {"control.lease_ttl_s=1"}, "--set[1]:1:21: control.lease_ttl_s: value 1 is out of range"},
      {"unknown generated dataset", replaced(base, "uri = \"synthetic://text\"", "uri = \"generated://nope/text\""), {},
       "@:12:7: data.sources[1].uri: unknown generated dataset \"nope\" (known: quickstart, video-heavy)"},
  };
}

}  // namespace

TEST_CASE("bad configs exit 2 with FILE:LINE:COL: key.path: reason") {
  temp_dir dir;
  const auto all = cases();
  CHECK(all.size() >= 15);
  for (const auto& c : all) {
    SUBCASE(c.name) {
      const auto path = dir.write("job.toml", c.toml);
      std::string cmd = std::string(MSOMNI_RUN_BINARY) + " " + path + " --dry-run";
      for (const auto& s : c.sets) cmd += " --set '" + s + "'";
      const auto r = run_command(cmd);
      std::string expected = c.expected;
      if (expected[0] == '@') expected = path + expected.substr(1);
      CAPTURE(r.output);
      CHECK(r.exit_code == 2);
      CHECK(r.output.find(expected) != std::string::npos);
      CHECK(r.output.find("nothing was started") != std::string::npos);
    }
  }
}

TEST_CASE("a control port already in use is refused, naming the key") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);

  temp_dir dir;
  const auto path = dir.write("job.toml", msomni::testing::valid_config_text());
  const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + path +
                             " --dry-run --set cluster.control_port=" + std::to_string(port));
  ::close(fd);
  CAPTURE(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--set[1]:1:22: cluster.control_port: port " + std::to_string(port)) !=
        std::string::npos);
}

TEST_CASE("config errors show control and bidirectional characters escaped, never raw") {
  const auto base = msomni::testing::valid_config_text();
  struct escaped_case {
    const char* name;
    std::string toml;
    std::string expected;  // what the message shows instead of the raw character
  };
  const std::vector<escaped_case> all = {
      {"ESC sequence in a quoted key", replaced(base, "seed = 7", "seed = 7\n\"st\\u001b[31meps\" = 3"),
       "\\x1b[31meps"},
      {"right-to-left override in a value", replaced(base, "name = \"unit\"", "name = \"unit\"\nclass = \"vip\\u202Etxt\""),
       "vip\\u202etxt"},
      {"carriage return in a value", replaced(base, "name = \"unit\"", "name = \"unit\"\nclass = \"a\\rb\""), "a\\rb"},
      {"raw ESC byte in a key of the file", replaced(base, "steps = 10", "st\x1b[2Jeps = 10"), "training.st\\x1b[2Jeps"},
      {"C1 control in a quoted key", replaced(base, "seed = 7", "seed = 7\n\"k\\u009b\" = 1"), "k\\u009b"},
      {"a byte that is not UTF-8", replaced(base, "seed = 7", "seed = 7\n\"\xff\" = 2"), "\\xff"},
  };
  temp_dir dir;
  for (const auto& c : all) {
    SUBCASE(c.name) {
      const auto path = dir.write("job.toml", c.toml);
      const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + path + " --dry-run");
      CAPTURE(r.output);
      CHECK(r.exit_code == 2);
      CHECK(r.output.find(c.expected) != std::string::npos);
      CHECK(r.output.find('\x1b') == std::string::npos);
      CHECK(r.output.find('\r') == std::string::npos);
      CHECK(r.output.find("\xe2\x80\xae") == std::string::npos);  // U+202E
      CHECK(r.output.find("\xc2\x9b") == std::string::npos);      // U+009B, a one-byte CSI
    }
  }
}
