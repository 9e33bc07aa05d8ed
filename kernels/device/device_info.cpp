// probe_devices: the CPU build reports no CUDA; the CUDA build asks the driver.
#include "device/device_info.hpp"

namespace msomni::kernels {

#ifdef MSOMNI_WITH_CUDA
device_report probe_cuda_devices();  // kernels/cuda/device_query.cu
#endif

device_report probe_devices() {
#ifdef MSOMNI_WITH_CUDA
  return probe_cuda_devices();
#else
  return device_report{false, {}, "built without CUDA (ENABLE_CUDA=OFF or nvcc not found)"};
#endif
}

}  // namespace msomni::kernels
