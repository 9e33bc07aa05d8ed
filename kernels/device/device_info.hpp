// What accelerators this process can use: compiled-in support and the devices present.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::kernels {

struct gpu_device {
  int index = 0;
  std::string name;
  uint64_t memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

struct device_report {
  bool cuda_compiled = false;     // built with nvcc
  std::vector<gpu_device> gpus;   // empty when none is usable
  std::string status;             // why none is usable, or "ok"
};

// Never throws: a machine without a driver yields an empty list and the reason.
device_report probe_devices();

}  // namespace msomni::kernels
