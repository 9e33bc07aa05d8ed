// training.device decided per rank from the node's facts: auto falls back to the CPU with the
// reason, cuda without a GPU for the rank is refused, each CUDA rank binds the GPU of its
// local index within the visible set (CUDA_VISIBLE_DEVICES, else MSOMNI_JOB_GPUS).
#include "config/config_loader.hpp"
#include "config/device_choice.hpp"
#include "support/config_text.hpp"

#include <doctest/doctest.h>

using namespace msomni::config;

namespace {

node_gpu_facts gpus(int n) {
  node_gpu_facts f;
  f.cuda_compiled = true;
  f.probe_status = "ok";
  for (int i = 0; i < n; ++i) f.devices.push_back("GPU-" + std::to_string(i));
  return f;
}

node_gpu_facts no_driver() {
  node_gpu_facts f;
  f.cuda_compiled = true;
  f.probe_status = "no usable GPU: cudaErrorInsufficientDriver (CUDA driver version is insufficient)";
  return f;
}

}  // namespace

TEST_CASE("cpu never looks at the GPUs") {
  const auto c = choose_device("cpu", gpus(8), 0);
  CHECK_FALSE(c.cuda);
  CHECK_FALSE(c.refused);
  CHECK(c.reason.empty());
}

TEST_CASE("auto and cuda bind the GPU of the rank's local index") {
  for (const char* setting : {"auto", "cuda"}) {
    INFO(setting);
    for (int i = 0; i < 4; ++i) {
      const auto c = choose_device(setting, gpus(4), i);
      CHECK(c.cuda);
      CHECK(c.gpu == i);
      CHECK_FALSE(c.refused);
    }
  }
}

TEST_CASE("without a usable GPU auto computes on the CPU and says why, cuda is refused") {
  const auto a = choose_device("auto", no_driver(), 0);
  CHECK_FALSE(a.cuda);
  CHECK_FALSE(a.refused);
  CHECK(a.reason == no_driver().probe_status);  // said once, not "no usable GPU: no usable GPU: ..."
  const auto c = choose_device("cuda", no_driver(), 0);
  CHECK_FALSE(c.cuda);
  CHECK(c.refused);
  CHECK(c.reason.find("cudaErrorInsufficientDriver") != std::string::npos);

  node_gpu_facts cpu_build;
  cpu_build.probe_status = "built without CUDA (ENABLE_CUDA=OFF or nvcc not found)";
  CHECK(choose_device("cuda", cpu_build, 0).refused);
  CHECK(choose_device("auto", cpu_build, 0).reason.find("built without CUDA") != std::string::npos);
  // A CPU build cannot use GPUs even if a list of names were handed in.
  cpu_build.devices = {"GPU-0"};
  CHECK(choose_device("cuda", cpu_build, 0).refused);
}

TEST_CASE("a local index beyond the usable GPUs gets none: GPUs are never shared between ranks") {
  const auto c = choose_device("cuda", gpus(2), 2);
  CHECK(c.refused);
  CHECK(c.reason.find("local rank 2 of its node, which has 2 usable GPUs") != std::string::npos);
  const auto a = choose_device("auto", gpus(2), 2);
  CHECK_FALSE(a.cuda);
  CHECK_FALSE(a.refused);
}

TEST_CASE("MSOMNI_JOB_GPUS narrows the node's GPUs, modulo its device count, in the order given") {
  auto f = gpus(8);
  f.job_gpus = "13,12";  // the scheduler's ids on the second 8-GPU node
  CHECK(choose_device("cuda", f, 0).gpu == 5);
  CHECK(choose_device("cuda", f, 1).gpu == 4);
  CHECK(choose_device("cuda", f, 2).refused);
  f.job_gpus = "3, 3";
  CHECK(choose_device("cuda", f, 0).gpu == 3);
  CHECK(choose_device("cuda", f, 1).refused);  // the same GPU twice is one GPU
  f.job_gpus = "";
  CHECK(choose_device("cuda", f, 0).reason.find("MSOMNI_JOB_GPUS is empty") != std::string::npos);
  for (const char* bad : {"a", "1,", "-1", "1;2", "1,,2"}) {
    INFO(bad);
    f.job_gpus = bad;
    const auto c = choose_device("cuda", f, 0);
    CHECK(c.refused);
    CHECK(c.reason.find("is not a comma-separated list of GPU ids") != std::string::npos);
  }
}

TEST_CASE("CUDA_VISIBLE_DEVICES has already narrowed the runtime's list: MSOMNI_JOB_GPUS is not applied again") {
  auto f = gpus(2);
  f.cuda_visible_devices = "4,5";
  f.job_gpus = "4,5";
  CHECK(choose_device("cuda", f, 0).gpu == 0);
  CHECK(choose_device("cuda", f, 1).gpu == 1);
  auto none = no_driver();
  none.cuda_visible_devices = "";
  CHECK(choose_device("auto", none, 0).reason.find("CUDA_VISIBLE_DEVICES=\"\"") != std::string::npos);
}

TEST_CASE("msomni-run refuses cuda at training.device when the local node lacks a GPU for a rank it may run") {
  auto cfg = load_string(msomni::testing::valid_config_text(), "t.toml", {"training.device=\"cuda\""});
  CHECK(check_devices(cfg, gpus(4)).empty());  // max_replicas 4
  const auto errors = check_devices(cfg, gpus(3));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].key == "training.device");
  CHECK(errors[0].file == "--set[1]");
  CHECK(errors[0].reason.find("each of the 4 ranks this node may run") != std::string::npos);
  CHECK(check_devices(cfg, no_driver()).size() == 1);
  auto auto_cfg = load_string(msomni::testing::valid_config_text(), "t.toml");
  CHECK(check_devices(auto_cfg, no_driver()).empty());
}

TEST_CASE("the plan shows each local rank's device: its GPU, or the CPU with auto's reason") {
  auto cfg = load_string(msomni::testing::valid_config_text(), "t.toml");
  const auto on_gpus = render_plan(cfg, gpus(2));
  CHECK(on_gpus.find("rank 0 -> local (127.0.0.1), cuda, GPU 0 (GPU-0)") != std::string::npos);
  CHECK(on_gpus.find("rank 1 -> local (127.0.0.1), cuda, GPU 1 (GPU-1)") != std::string::npos);
  const auto on_cpu = render_plan(cfg, no_driver());
  CHECK(on_cpu.find("rank 0 -> local (127.0.0.1), cpu, ") != std::string::npos);
  CHECK(on_cpu.find("[training.device=auto: no usable GPU: no usable GPU: cudaErrorInsufficientDriver") ==
        std::string::npos);  // the reason is not repeated
  CHECK(on_cpu.find("[training.device=auto: no usable GPU: cudaErrorInsufficientDriver") != std::string::npos);
  auto cpu_cfg = load_string(msomni::testing::valid_config_text(), "t.toml", {"training.device=\"cpu\""});
  CHECK(render_plan(cpu_cfg, gpus(2)).find("rank 0 -> local (127.0.0.1), cpu, ") != std::string::npos);
}
