// nccl_communicator: NCCL all-reduce/broadcast on device buffers (see nccl_communicator.hpp).
#include "collectives/nccl_communicator.hpp"

#ifdef MSOMNI_WITH_NCCL
#include "core/check.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <thread>
#endif

namespace msomni::transport {

#ifdef MSOMNI_WITH_NCCL

namespace {

class nccl_communicator final : public communicator {
 public:
  nccl_communicator(int rank, int size, uint64_t epoch, int device, const ncclUniqueId& id, nccl_options options)
      : rank_(rank), size_(size), epoch_(epoch), device_(device), options_(std::move(options)) {
    try {
      MSOMNI_CHECK_CUDA(cudaSetDevice(device_));
      MSOMNI_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;  // so a member that never arrives cannot hold us forever
      accept(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config), "ncclCommInitRankConfig");
      wait_comm("initialisation");
    } catch (...) {
      release();  // no destructor runs for an object that was never constructed
      throw;
    }
  }
  ~nccl_communicator() override {
    // Abort, not destroy: destroying finalises with the other members, which waits on a dead
    // one; every operation of ours has completed (or failed) before we get here.
    release();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  uint64_t epoch() const override { return epoch_; }
  const char* backend() const override { return "nccl"; }

  void all_reduce(std::span<float> data, reduce_op op) override {
    usable("all-reduce");
    MSOMNI_CHECK_CUDA(cudaSetDevice(device_));
    accept(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, op == reduce_op::mean ? ncclAvg : ncclSum,
                         comm_, stream_),
           "ncclAllReduce");
    wait_stream("all-reduce");
  }
  void broadcast(std::span<std::byte> data, int root) override {
    usable("broadcast");
    MSOMNI_CHECK_CUDA(cudaSetDevice(device_));
    accept(ncclBroadcast(data.data(), data.data(), data.size(), ncclUint8, root, comm_, stream_), "ncclBroadcast");
    wait_stream("broadcast");
  }

 private:
  std::string where() const {
    return "NCCL epoch " + std::to_string(epoch_) + " rank " + std::to_string(rank_) + "/" + std::to_string(size_) +
           " on GPU " + std::to_string(device_);
  }
  void release() {
    if (comm_) ncclCommAbort(comm_);
    if (stream_) cudaStreamDestroy(stream_);
    comm_ = nullptr;
    stream_ = nullptr;
  }
  [[noreturn]] void give_up(const std::string& why) {
    broken_ = why;
    throw collective_error(where() + ": " + why);
  }
  void usable(const char* what) {
    if (!broken_.empty()) throw collective_error(where() + ": " + what + " on a communicator that gave up (" + broken_ + ")");
  }
  // A non-blocking communicator answers ncclInProgress for work it queued.
  void accept(ncclResult_t rc, const char* call) {
    if (rc != ncclSuccess && rc != ncclInProgress) give_up(std::string(call) + " failed: " + ncclGetErrorString(rc));
  }
  // One poll: NCCL's error, the caller's abandon check, the deadline. True when NCCL is idle.
  bool comm_settled(const char* what, std::chrono::steady_clock::time_point deadline) {
    ncclResult_t async = ncclSuccess;
    const ncclResult_t q = ncclCommGetAsyncError(comm_, &async);
    if (q != ncclSuccess) give_up(std::string(what) + ": ncclCommGetAsyncError failed: " + ncclGetErrorString(q));
    if (async != ncclSuccess && async != ncclInProgress)
      give_up(std::string(what) + " failed: " + ncclGetErrorString(async) + " (" + ncclGetLastError(comm_) + ")");
    if (options_.abandoned)
      if (auto why = options_.abandoned(); !why.empty()) give_up(std::string(what) + " abandoned: " + why);
    if (std::chrono::steady_clock::now() > deadline)
      give_up(std::string(what) + ": not complete within " + std::to_string(options_.timeout.count()) +
              " ms (a member lost or never arrived)");
    return async == ncclSuccess;
  }
  void wait_comm(const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    while (!comm_settled(what, deadline)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void wait_stream(const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    wait_comm(what);
    for (;;) {
      const cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) give_up(std::string(what) + ": " + cudaGetErrorString(q));
      (void)comm_settled(what, deadline);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  int rank_, size_;
  uint64_t epoch_;
  int device_;
  nccl_options options_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  std::string broken_;  // why it gave up; empty while usable
};

}  // namespace

bool nccl_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::unique_ptr<communicator> make_nccl_communicator(communicator& bootstrap, int cuda_device,
                                                     const nccl_options& options) {
  ncclUniqueId id{};
  try {
    if (bootstrap.rank() == 0) MSOMNI_CHECK_NCCL(ncclGetUniqueId(&id));
    bootstrap.broadcast(std::as_writable_bytes(std::span<ncclUniqueId>(&id, 1)), 0);
    return std::make_unique<nccl_communicator>(bootstrap.rank(), bootstrap.size(), bootstrap.epoch(),
                                               cuda_device, id, options);
  } catch (const call_error& e) {
    throw collective_error(std::string("NCCL communicator: ") + e.what());
  }
}

#else

bool nccl_available() { return false; }

std::unique_ptr<communicator> make_nccl_communicator(communicator&, int, const nccl_options&) {
  throw collective_error("NCCL communicator: this build has no CUDA/NCCL (ENABLE_CUDA=OFF or nvcc not found)");
}

#endif

}  // namespace msomni::transport
