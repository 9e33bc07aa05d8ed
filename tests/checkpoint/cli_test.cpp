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

namespace {

// The lines of `command`'s stdout alone (stderr dropped), and of its stderr alone.
struct split_output {
  int exit_code = 0;
  std::string out, err;
};

split_output run_split(const std::string& args, const fs::path& err_file) {
  split_output s;
  const auto r = run_command("{ " + cli(args) + " 2>" + err_file.string() + "; }");
  s.exit_code = r.exit_code;
  s.out = r.output;
  s.err = msomni::testing::read_text(err_file);
  return s;
}

}  // namespace

TEST_CASE("ckpt ls - verify - export take a run directory - a root or one checkpoint") {
  msomni::testing::temp_dir tmp;
  const fs::path run_dir = tmp.path() / "run";
  save_two(run_dir / "checkpoints");
  const fs::path err = tmp.path() / "err.txt";
  for (const fs::path& dir : {run_dir, run_dir / "checkpoints"}) {
    const auto ls = run_split("ckpt ls " + dir.string(), err);
    INFO(dir.string() << "\n" << ls.out << ls.err);
    CHECK(ls.exit_code == 0);
    CHECK(ls.out.find("step-00000002") != std::string::npos);
    CHECK(ls.out.find("step-00000001") != std::string::npos);
    const auto verify = run_split("ckpt verify " + dir.string(), err);
    CHECK(verify.exit_code == 0);
    CHECK(verify.out.find("a resume would load step-00000002") != std::string::npos);
  }
  // One checkpoint directory: only it.
  const fs::path one = run_dir / "checkpoints" / "step-00000001";
  const auto ls = run_split("ckpt ls " + one.string(), err);
  INFO(ls.out << ls.err);
  CHECK(ls.exit_code == 0);
  CHECK(ls.out.find("step-00000001") != std::string::npos);
  CHECK(ls.out.find("step-00000002") == std::string::npos);
  const auto verify = run_split("ckpt verify " + one.string(), err);
  CHECK(verify.exit_code == 0);
  CHECK(verify.out.find("OK    step-00000001") != std::string::npos);
  CHECK(verify.out.find("step-00000002") == std::string::npos);
  const fs::path out = tmp.path() / "w.safetensors";
  const auto exp = run_split("ckpt export " + one.string() + " --out " + out.string(), err);
  CHECK(exp.exit_code == 0);
  CHECK(exp.out.find("of step-00000001 rank 0") != std::string::npos);
}

TEST_CASE("ckpt ls and verify of a directory without checkpoints say so and exit 1") {
  msomni::testing::temp_dir tmp;
  fs::create_directory(tmp.path() / "empty");
  const fs::path err = tmp.path() / "err.txt";
  for (const char* verb : {"ls", "verify", "export"}) {
    const std::string extra = std::string(verb) == "export" ? " --out " + (tmp.path() / "x").string() : "";
    const auto r = run_split(std::string("ckpt ") + verb + " " + (tmp.path() / "empty").string() + extra, err);
    INFO(verb << "\n" << r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("no checkpoints") != std::string::npos);
  }
}

TEST_CASE("ckpt ls shows whole steps - and log lines stay off stdout") {
  msomni::testing::temp_dir tmp;
  {
    checkpoint_store store(tmp.path());
    auto meta = make_meta(1300, 1);
    meta.micro_step = 0;
    store.save_full(meta, {make_state(crash_seed, 1300, 0, 64)});
    store.save_full(make_meta(1400, 1), {make_state(crash_seed, 1400, 0, 64)});
  }
  const fs::path err = tmp.path() / "err.txt";
  const auto ls = run_split("ckpt ls " + tmp.path().string(), err);
  INFO(ls.out);
  REQUIRE(ls.exit_code == 0);
  std::istringstream lines(ls.out);
  std::string line;
  std::getline(lines, line);  // the header
  size_t rows = 0;
  while (std::getline(lines, line)) {
    std::istringstream cols(line);
    std::string name, kind, world, step;
    cols >> name >> kind >> world >> step;
    CHECK(step == name.substr(name.find_first_not_of("step-0")));
    ++rows;
  }
  CHECK(rows == 2);
  // A corrupt newest checkpoint: the verdict is on stdout, and no log line lands there or
  // repeats it on stderr.
  {
    std::fstream f(tmp.path() / "step-00001400" / "shard-00000.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x33');
  }
  const auto verify = run_split("ckpt verify " + tmp.path().string(), err);
  INFO(verify.out << "---\n" << verify.err);
  CHECK(verify.exit_code == 1);
  CHECK(verify.out.find("FAIL  step-00001400") != std::string::npos);
  CHECK(verify.out.find("a resume would load step-00001300") != std::string::npos);
  for (const auto* text : {&verify.out, &verify.err}) {
    CHECK(text->find(" WARN ") == std::string::npos);
    CHECK(text->find(" INFO ") == std::string::npos);
    CHECK(text->find("falling back") == std::string::npos);
  }
}

TEST_CASE("ckpt export metadata carries the model config the manifest records") {
  msomni::testing::temp_dir tmp;
  {
    checkpoint_store store(tmp.path());
    auto meta = make_meta(5, 1);
    meta.config = {{"model.name", "\"fuyu-tiny\""}, {"model.d_model", "64"}, {"training.lr", "0.001"}};
    store.save_full(meta, {make_state(crash_seed, 5, 0, 64)});
  }
  const std::string out = (tmp.path() / "w.safetensors").string();
  const auto r = run_command(cli("ckpt export " + tmp.path().string() + " --out " + out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto py = run_command("/usr/bin/python3 " + std::string(MSOMNI_CKPT_TEST_DIR) + "/read_safetensors.py " + out);
  INFO(py.output);
  REQUIRE(py.exit_code == 0);
  const auto first = py.output.substr(0, py.output.find('\n'));
  REQUIRE(first.rfind("meta ", 0) == 0);
  const auto meta = nlohmann::json::parse(first.substr(5));
  const auto model = nlohmann::json::parse(meta.value("msomni_model_config", "{}"));
  CHECK(model == nlohmann::json{{"name", "fuyu-tiny"}, {"d_model", 64}});
  const auto all = nlohmann::json::parse(meta.value("msomni_config", "{}"));
  CHECK(all.value("training.lr", 0.0) == 0.001);
  CHECK(meta.value("msomni_world_size", "") == "1");
}
