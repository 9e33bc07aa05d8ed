// msomni-run refuses a torch model that cannot train before anything starts (exit 2, nothing
// started), each refusal at the [model] key it concerns and with the Python FILE:LINE: a
// missing file, a missing class, a class that is no nn.Module, an import or syntax error, a
// constructor given arguments it does not take, a forward whose loss is not a scalar, not
// finite or not connected to the parameters, a forward that raises or takes msomni's
// gradients away, an interpreter that does not start or has no torch. Skipped when
// /usr/bin/python3 cannot import torch.
#include "models/torch_python.hpp"
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <doctest/doctest.h>

#include <string>

using msomni::testing::run_command;

namespace {

const std::string modules_dir = std::string(MSOMNI_SOURCE_DIR) + "/tests/models/torch_modules";

// A job of the module `cls` in `file` (in torch_modules/), with `extra` [model] lines.
std::string job(const std::string& file, const std::string& cls, const std::string& extra = "") {
  return "[job]\nname = \"torch-refusal\"\n[model]\nname = \"torch\"\ntorch_file = \"" + modules_dir + "/" + file +
         "\"\ntorch_class = \"" + cls + "\"\n" + extra +
         "image_size = 16\npatch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"text\"\nuri = \"synthetic://text\"\nmodality = \"text\"\n"
         "[training]\nglobal_batch = 4\nmicro_batch = 2\nsteps = 4\ndevice = \"cpu\"\n[elasticity]\nreplicas = 2\n";
}

struct refusal {
  int exit_code = 0;
  std::string output;
};

refusal run_job(const msomni::testing::temp_dir& dir, const std::string& text, bool dry_run) {
  const auto cfg = dir.write("job.toml", text);
  const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg + (dry_run ? " --dry-run" : "") + " --run-dir " +
                             (dir.path() / "run").string());
  return {r.exit_code, r.output};
}

// The refusal msomni-run prints for `text`, with and without --dry-run: the same, exit 2,
// and no run started.
std::string refused(const std::string& text) {
  msomni::testing::temp_dir dir;
  const auto dry = run_job(dir, text, true);
  const auto real = run_job(dir, text, false);
  CAPTURE(dry.output);
  CAPTURE(real.output);
  CHECK(dry.exit_code == 2);
  CHECK(real.exit_code == 2);
  CHECK(real.output.find("the configuration is invalid; nothing was started.") != std::string::npos);
  CHECK(real.output.find("ranks_started") == std::string::npos);
  const auto at = real.output.find("job.toml:");
  return at == std::string::npos ? real.output : real.output.substr(at);
}

}  // namespace

TEST_CASE("a torch model's file, class and constructor are refused before anything starts, with FILE:LINE") {
  if (const auto why = msomni::testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  auto why = refused(job("nowhere.py", "TinyLM"));
  CHECK(why.find("job.toml:5:14: model.torch_file: " + modules_dir + "/nowhere.py: no such file") == 0);
  why = refused(job("tiny_lm.py", "NoSuchClass"));
  CHECK(why.find("job.toml:6:15: model.torch_class: " + modules_dir +
                 "/tiny_lm.py: no class 'NoSuchClass' (nn.Module classes defined there: TinyLM)") == 0);
  why = refused(job("tiny_lm.py", "NotAModule"));
  CHECK(why.find("model.torch_class: " + modules_dir + "/tiny_lm.py:54: 'NotAModule' is not a subclass of torch.nn.Module") !=
        std::string::npos);
  why = refused(job("import_error.py", "Model"));
  CHECK(why.find("job.toml:5:14: model.torch_file: importing failed: " + modules_dir +
                 "/import_error.py:5: ModuleNotFoundError: No module named 'msomni_test_no_such_package'") == 0);
  why = refused(job("syntax_error.py", "Model"));
  CHECK(why.find("model.torch_file: importing failed: " + modules_dir + "/syntax_error.py:4: SyntaxError") !=
        std::string::npos);
  why = refused(job("tiny_lm.py", "TinyLM", "torch_args = { no_such_arg = 1 }\n"));
  CHECK(why.find("job.toml:7:14: model.torch_args: constructing TinyLM(**model.torch_args) failed: " + modules_dir +
                 "/tiny_lm.py:14: TypeError:") == 0);
  CHECK(why.find("unexpected keyword argument 'no_such_arg'") != std::string::npos);
}

TEST_CASE("a forward whose loss msomni cannot train on is refused on the probe batch, at the module's forward") {
  if (const auto why = msomni::testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  const std::string forward = modules_dir + "/tiny_lm.py:29: ";
  auto why = refused(job("tiny_lm.py", "TinyLM", "torch_args = { mode = \"vector\" }\n"));
  CHECK(why.find("job.toml:6:15: model.torch_class: " + forward + "TinyLM.forward returned a tensor of shape [") == 0);
  CHECK(why.find("msomni needs the mean loss as a scalar tensor") != std::string::npos);
  why = refused(job("tiny_lm.py", "TinyLM", "torch_args = { mode = \"nan\" }\n"));
  CHECK(why.find("model.torch_class: " + forward + "TinyLM.forward returned nan on msomni's probe batch; the loss must be finite") !=
        std::string::npos);
  why = refused(job("tiny_lm.py", "TinyLM", "torch_args = { mode = \"detached\" }\n"));
  CHECK(why.find(forward + "TinyLM.forward returned a loss that depends on no parameter") != std::string::npos);
  why = refused(job("tiny_lm.py", "TinyLM", "torch_args = { mode = \"raise\" }\n"));
  CHECK(why.find("model.torch_class: forward or backward failed: " + modules_dir +
                 "/tiny_lm.py:48: RuntimeError: the module gave up") != std::string::npos);
  why = refused(job("tiny_lm.py", "TinyLM", "torch_args = { mode = \"zero_grad\" }\n"));
  CHECK(why.find(forward + "during forward or backward, parameter 'embed.weight'.grad was replaced") != std::string::npos);
}

TEST_CASE("an interpreter that does not start or cannot import torch is refused at model.torch_python") {
  if (const auto why = msomni::testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  auto why = refused(job("tiny_lm.py", "TinyLM", "torch_python = \"/nonexistent/python3\"\n"));
  CHECK(why.find("job.toml:7:16: model.torch_python: cannot start /nonexistent/python3") == 0);
  // The same Python without its site packages: no torch.
  msomni::testing::temp_dir dir;
  const auto python = dir.write("python-without-site", "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n");
  REQUIRE(run_command("chmod +x " + python).exit_code == 0);
  why = refused(job("tiny_lm.py", "TinyLM", "torch_python = \"" + python + "\"\n"));
  CHECK(why.find("job.toml:7:16: model.torch_python: ") == 0);
  CHECK(why.find("cannot import torch: ModuleNotFoundError: No module named 'torch'") != std::string::npos);
}
