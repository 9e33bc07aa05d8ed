// nccl_communicator: NCCL all-reduce/broadcast on device buffers (see nccl_communicator.hpp).
#include "collectives/nccl_communicator.hpp"

#ifdef MSOMNI_WITH_NCCL
#include "core/check.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#endif

namespace msomni::transport {

#ifdef MSOMNI_WITH_NCCL

namespace {

class nccl_communicator final : public communicator {
 public:
  nccl_communicator(int rank, int size, uint64_t epoch, int device, const ncclUniqueId& id)
      : rank_(rank), size_(size), epoch_(epoch), device_(device) {
    MSOMNI_CHECK_CUDA(cudaSetDevice(device_));
    MSOMNI_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MSOMNI_CHECK_NCCL(ncclCommInitRank(&comm_, size_, id, rank_));
  }
  ~nccl_communicator() override {
    if (comm_) ncclCommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  uint64_t epoch() const override { return epoch_; }
  const char* backend() const override { return "nccl"; }

  void all_reduce(std::span<float> data, reduce_op op) override {
    MSOMNI_CHECK_CUDA(cudaSetDevice(device_));
    MSOMNI_CHECK_NCCL(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32,
                                    op == reduce_op::mean ? ncclAvg : ncclSum, comm_, stream_));
    MSOMNI_CHECK_CUDA(cudaStreamSynchronize(stream_));
  }
  void broadcast(std::span<std::byte> data, int root) override {
    MSOMNI_CHECK_CUDA(cudaSetDevice(device_));
    MSOMNI_CHECK_NCCL(ncclBroadcast(data.data(), data.data(), data.size(), ncclUint8, root, comm_, stream_));
    MSOMNI_CHECK_CUDA(cudaStreamSynchronize(stream_));
  }

 private:
  int rank_, size_;
  uint64_t epoch_;
  int device_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool nccl_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::unique_ptr<communicator> make_nccl_communicator(communicator& bootstrap, int cuda_device) {
  ncclUniqueId id{};
  try {
    if (bootstrap.rank() == 0) MSOMNI_CHECK_NCCL(ncclGetUniqueId(&id));
    bootstrap.broadcast(std::as_writable_bytes(std::span<ncclUniqueId>(&id, 1)), 0);
    return std::make_unique<nccl_communicator>(bootstrap.rank(), bootstrap.size(), bootstrap.epoch(),
                                               cuda_device, id);
  } catch (const call_error& e) {
    throw collective_error(std::string("NCCL communicator: ") + e.what());
  }
}

#else

bool nccl_available() { return false; }

std::unique_ptr<communicator> make_nccl_communicator(communicator&, int) {
  throw collective_error("NCCL communicator: this build has no CUDA/NCCL (ENABLE_CUDA=OFF or nvcc not found)");
}

#endif

}  // namespace msomni::transport
