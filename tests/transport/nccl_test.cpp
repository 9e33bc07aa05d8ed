// NCCL backend: a one-rank communicator on the local GPU (bootstrapped through a one-member
// UCX ring) sums and averages device buffers. Skipped (ctest says so) where no GPU is usable.
#include "collectives/nccl_communicator.hpp"
#include "collectives/ring_communicator.hpp"
#include "support/test_skip.hpp"

#include <doctest/doctest.h>

#include <iostream>
#include <vector>
#ifdef MSOMNI_WITH_NCCL
#include <cuda_runtime.h>
#endif

using namespace msomni::transport;

TEST_CASE("NCCL one-rank all-reduce and broadcast on the GPU") {
  if (!nccl_available()) MSOMNI_SKIP_TEST("no usable GPU (the NCCL test needs one)");
#ifdef MSOMNI_WITH_NCCL
  ucx_node_options node;
  node.name = "nccl-node";
  transport_hub hub(node);
  ring_communicator ring(hub, {"nccl-node"}, 1);
  auto comm = make_nccl_communicator(ring, 0);
  CHECK(std::string(comm->backend()) == "nccl");
  std::vector<float> host(1 << 20);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 1000);
  float* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, host.size() * sizeof(float)) == cudaSuccess);
  cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  comm->all_reduce({dev, host.size()}, reduce_op::sum);
  std::vector<float> back(host.size());
  cudaMemcpy(back.data(), dev, back.size() * sizeof(float), cudaMemcpyDeviceToHost);
  CHECK(back == host);
  comm->all_reduce({dev, host.size()}, reduce_op::mean);
  cudaMemcpy(back.data(), dev, back.size() * sizeof(float), cudaMemcpyDeviceToHost);
  CHECK(back == host);
  cudaFree(dev);
#endif
}

TEST_CASE("without NCCL the factory says why") {
  if (nccl_available()) return;
  ucx_node_options node;
  node.name = "no-nccl";
  transport_hub hub(node);
  ring_communicator ring(hub, {"no-nccl"}, 1);
  try {
    make_nccl_communicator(ring, 0);
#ifndef MSOMNI_WITH_NCCL
    FAIL("expected an error");
#endif
  } catch (const collective_error& e) {
    CHECK(std::string(e.what()).find("NCCL communicator") == 0);
  }
}
