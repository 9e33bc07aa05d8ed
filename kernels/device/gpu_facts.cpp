// gather_gpu_facts and local_rank_index (see gpu_facts.hpp).
#include "device/gpu_facts.hpp"

#include "device/device_info.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace msomni::kernels {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

}  // namespace

config::node_gpu_facts gather_gpu_facts() {
  const auto report = probe_devices();
  config::node_gpu_facts f;
  f.cuda_compiled = report.cuda_compiled;
  f.probe_status = report.status;
  for (const auto& g : report.gpus) f.devices.push_back(g.name);
  f.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES");
  f.job_gpus = env("MSOMNI_JOB_GPUS");
  return f;
}

int64_t local_rank_index(int64_t fallback) {
  const auto v = env("MSOMNI_NODE_SLOT");
  if (!v) return fallback;
  int64_t i = -1;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), i);
  if (v->empty() || ec != std::errc{} || end != v->data() + v->size() || i < 0)
    throw std::invalid_argument("MSOMNI_NODE_SLOT=\"" + *v + "\" is not a slot index (a number >= 0)");
  return i;
}

}  // namespace msomni::kernels
