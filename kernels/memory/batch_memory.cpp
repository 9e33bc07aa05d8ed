// make_batch_memory (see ops.hpp): a recycling pool over page-locked memory of the rank's GPU,
// or over ordinary page-aligned memory for the CPU.
#include "memory/pinned_host.hpp"
#include "memory/recycling_pool.hpp"
#include "ops.hpp"

#include <cstdlib>
#include <new>

namespace msomni::kernels {

std::shared_ptr<std::pmr::memory_resource> make_batch_memory(backend_kind kind, int device_index) {
  if (kind == backend_kind::cuda) {
    check_pinned_host_device(device_index);  // fails here, before any batch is packed
    return std::make_shared<recycling_pool>([device_index](size_t bytes) { return pinned_host_alloc(device_index, bytes); },
                                            [](void* p) { pinned_host_free(p); });
  }
  return std::make_shared<recycling_pool>(
      [](size_t bytes) {
        void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
        if (!p) throw std::bad_alloc();
        return p;
      },
      [](void* p) { std::free(p); });
}

}  // namespace msomni::kernels
