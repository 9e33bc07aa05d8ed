// NCCL backend: a one-rank communicator on the local GPU (bootstrapped through a one-member
// UCX ring) keeps device buffers through sum and mean; two ranks on two GPUs (two UCX nodes
// in one process, one thread each) sum and average values whose sum and mean differ, so a
// wrong reduction fails. Skipped (ctest says so) where the GPUs are missing.
#include "collectives/nccl_communicator.hpp"
#include "collectives/ring_communicator.hpp"
#include "support/test_skip.hpp"

#include <doctest/doctest.h>

#include <iostream>
#include <string>
#include <thread>
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

TEST_CASE("NCCL two-rank all-reduce: sum and mean of values that differ per rank") {
  if (!nccl_available()) MSOMNI_SKIP_TEST("no usable GPU (the two-rank NCCL test needs two)");
#ifdef MSOMNI_WITH_NCCL
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 2)
    MSOMNI_SKIP_TEST("the two-rank NCCL test needs two GPUs (NCCL refuses two ranks on one), found " + std::to_string(gpus));
  ucx_node_options a_opt, b_opt;
  a_opt.name = "nccl-a";
  b_opt.name = "nccl-b";
  transport_hub a(a_opt), b(b_opt);
  a.node().connect(b.node().address());
  REQUIRE(a.node().wait_up("nccl-b", std::chrono::seconds(10)));
  REQUIRE(b.node().wait_up("nccl-a", std::chrono::seconds(10)));
  const size_t n = (1 << 20) + 3;
  // Rank r holds (r + 1) * (i % 97 + 1): sum 3x, mean 1.5x the first rank's values.
  std::vector<float> sum[2], mean[2];
  std::string error[2];
  auto run = [&](int r, transport_hub& hub) {
    try {
      ring_communicator ring(hub, {"nccl-a", "nccl-b"}, 1);
      auto comm = make_nccl_communicator(ring, r);
      cudaSetDevice(r);
      std::vector<float> host(n);
      for (size_t i = 0; i < n; ++i) host[i] = float(r + 1) * float(i % 97 + 1);
      float* dev = nullptr;
      if (cudaMalloc(&dev, n * sizeof(float)) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
      cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      comm->all_reduce({dev, n}, reduce_op::sum);
      sum[r].resize(n);
      cudaMemcpy(sum[r].data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost);
      cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      comm->all_reduce({dev, n}, reduce_op::mean);
      mean[r].resize(n);
      cudaMemcpy(mean[r].data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost);
      cudaFree(dev);
    } catch (const std::exception& e) {
      error[r] = e.what();
    }
  };
  std::thread t0(run, 0, std::ref(a)), t1(run, 1, std::ref(b));
  t0.join();
  t1.join();
  REQUIRE_MESSAGE(error[0].empty(), error[0]);
  REQUIRE_MESSAGE(error[1].empty(), error[1]);
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < n; ++i) {
      const float base = float(i % 97 + 1);
      if (sum[r][i] != 3 * base || mean[r][i] != 1.5f * base) {
        FAIL_CHECK("rank " << r << " element " << i << ": sum " << sum[r][i] << " (want " << 3 * base << "), mean "
                           << mean[r][i] << " (want " << 1.5f * base << ")");
        break;
      }
    }
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
