// `msomni ckpt ls|verify|export` against real checkpoint roots; the safetensors export is
// read back by /usr/bin/python3 (json+struct, and torch when installed) with equal values.
#include "crash_support.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace msomni::ckpt;
using namespace msomni::ckpt::testing;
using msomni::testing::run_command;
namespace fs = std::filesystem;

namespace {

std::string cli(const std::string& args) { return std::string(MSOMNI_CLI) + " " + args; }

void save_two(const fs::path& root) {
  checkpoint_store store(root);
  for (uint64_t s : {1, 2})
    store.save_full(make_meta(s, 2), {make_state(crash_seed, s, 0, 256), make_state(crash_seed, s, 1, 256)});
}

}  // namespace

TEST_CASE("ckpt ls lists checkpoints - the latest and leftovers") {
  msomni::testing::temp_dir tmp;
  save_two(tmp.path());
  fs::create_directory(tmp.path() / ".tmp-step-00000003-e1");
  const auto r = run_command(cli("ckpt ls " + tmp.path().string()));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("step-00000002   full") != std::string::npos);
  CHECK(r.output.find("(latest)") != std::string::npos);
  CHECK(r.output.find("step-00000001") != std::string::npos);
  CHECK(r.output.find(".tmp-step-00000003-e1") != std::string::npos);
}

TEST_CASE("ckpt verify passes good checkpoints and fails a corrupt one - naming it") {
  msomni::testing::temp_dir tmp;
  save_two(tmp.path());
  auto ok = run_command(cli("ckpt verify " + tmp.path().string()));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(ok.output.find("OK    step-00000002") != std::string::npos);
  {
    std::fstream f(tmp.path() / "step-00000002" / "shard-00001.bin",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x5a');
  }
  const auto bad = run_command(cli("ckpt verify " + tmp.path().string()));
  INFO(bad.output);
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("FAIL  step-00000002") != std::string::npos);
  CHECK(bad.output.find("shard-00001.bin") != std::string::npos);
  CHECK(bad.output.find("a resume would load step-00000001") != std::string::npos);
  CHECK(run_command(cli("ckpt verify " + tmp.path().string() + " --step 1")).exit_code == 0);
}

TEST_CASE("ckpt export writes safetensors that Python reads back with equal values") {
  msomni::testing::temp_dir tmp;
  save_two(tmp.path());
  const std::string out = (tmp.path() / "weights.safetensors").string();
  const auto r = run_command(cli("ckpt export " + tmp.path().string() + " --out " + out +
                                 " --rank 1"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto py = run_command("/usr/bin/python3 " + std::string(MSOMNI_CKPT_TEST_DIR) +
                              "/read_safetensors.py " + out);
  INFO(py.output);
  REQUIRE(py.exit_code == 0);
  const rank_state want = make_state(crash_seed, 2, 1, 256);
  std::istringstream lines(py.output);
  std::string line;
  size_t tensors = 0;
  while (std::getline(lines, line)) {
    std::istringstream ls(line);
    std::string name, shape;
    ls >> name;
    if (name == "meta") {
      const auto meta = nlohmann::json::parse(line.substr(5));
      CHECK(meta.value("msomni_step", "") == "2");
      continue;
    }
    if (name == "torch:") continue;
    ls >> shape;
    const tensor_entry* t = want.find_tensor("param/" + name);
    REQUIRE(t);
    std::string dims;
    for (size_t i = 0; i < t->shape.size(); ++i) dims += (i ? "," : "") + std::to_string(t->shape[i]);
    CHECK(shape == dims);
    std::vector<float> got;
    std::string v;
    while (ls >> v) got.push_back(static_cast<float>(std::stod(v)));
    CHECK(got == t->values);
    ++tensors;
  }
  CHECK(tensors == 2);  // param/layer0.w and param/layer0.b; optimizer state not exported
  if (run_command("/usr/bin/python3 -c 'import torch'").exit_code == 0)
    CHECK(py.output.find("torch: ok") != std::string::npos);
}

TEST_CASE("ckpt refuses bad usage and missing directories clearly") {
  CHECK(run_command(cli("ckpt")).exit_code == 2);
  CHECK(run_command(cli("ckpt frobnicate /tmp")).exit_code == 2);
  const auto r = run_command(cli("ckpt ls /nonexistent/msomni"));
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("/nonexistent/msomni is not a directory") != std::string::npos);
  CHECK(run_command(cli("nosuchcommand")).exit_code == 2);
}
