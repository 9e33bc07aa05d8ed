// CUDA device discovery. cudaGetDeviceCount fails without a driver and then leaves the
// count untouched, so the return code, not the count, decides.
#include "device/device_info.hpp"

#include <cuda_runtime.h>

namespace msomni::kernels {

device_report probe_cuda_devices() {
  device_report report;
  report.cuda_compiled = true;
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    report.status = std::string("no usable GPU: ") + cudaGetErrorName(rc) + " (" +
                    cudaGetErrorString(rc) + ")";
    return report;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    report.gpus.push_back(gpu_device{i, prop.name, static_cast<uint64_t>(prop.totalGlobalMem),
                                     prop.major, prop.minor});
  }
  report.status = report.gpus.empty() ? "driver present, no devices" : "ok";
  return report;
}

}  // namespace msomni::kernels
