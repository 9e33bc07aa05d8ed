// The pre-flight's rules with made-up facts: a full disk, a slow GEMM, a refused port, a
// damaged checkpoint, without making any of them on this machine.
#include "health_core.hpp"
#include "health_report.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace msomni::health;

TEST_CASE("health core: free space below keep + 1 checkpoints fails, below twice that warns, else passes") {
  disk_fact d;
  d.dir = "/ckpt";
  d.checkpoint_bytes = 100 << 20;
  d.keep = 3;
  d.free_bytes = uint64_t(399) << 20;  // 4 checkpoints (keep 3 + the one being written) need 400 MiB
  auto r = judge_disk_space(d);
  CHECK(r.id == "storage.free_space");
  CHECK(r.status == check_status::fail);
  CHECK(r.value == "399.0");
  CHECK(r.threshold == "400.0");
  CHECK(r.unit == "MiB");
  CHECK(r.reason.find("not enough free space") != std::string::npos);
  CHECK(r.reason.find("/ckpt") != std::string::npos);
  d.free_bytes = uint64_t(500) << 20;
  CHECK(judge_disk_space(d).status == check_status::warn);
  d.free_bytes = uint64_t(800) << 20;
  CHECK(judge_disk_space(d).status == check_status::pass);
}

TEST_CASE("health core: a GEMM off the reference fails, NaN included, and a slow one warns") {
  gemm_fact g;
  g.n = 64;
  g.tolerance = 1e-3;
  g.max_abs_error = 1e-5;
  g.gflops = 50;
  CHECK(judge_gemm_parity("compute.gemm.parity", g).status == check_status::pass);
  CHECK(judge_gemm_speed(g, 2.0).status == check_status::pass);
  g.max_abs_error = 0.5;
  CHECK(judge_gemm_parity("compute.gemm.parity", g).status == check_status::fail);
  g.max_abs_error = std::nan("");
  CHECK(judge_gemm_parity("compute.gemm.parity", g).status == check_status::fail);
  g.gflops = 0.5;
  const auto slow = judge_gemm_speed(g, 2.0);
  CHECK(slow.status == check_status::warn);
  CHECK(slow.threshold == "2.0");
  g.error = "CPU backend: boom";
  CHECK(judge_gemm_parity("compute.gemm.parity", g).reason == "CPU backend: boom");
}

TEST_CASE("health core: no GPU is skipped with its reason unless training.device asks for CUDA") {
  gpu_fact g;
  g.cuda_compiled = true;
  g.status = "no usable GPU: cudaErrorNoDevice";
  auto r = judge_gpu(g);
  CHECK(r.status == check_status::skipped);
  CHECK(r.reason == "no GPU: cudaErrorNoDevice");
  g.cuda_required = true;
  CHECK(judge_gpu(g).status == check_status::fail);
  g.devices = 1;
  g.smallest_memory_bytes = uint64_t(80) << 30;
  CHECK(judge_gpu(g).status == check_status::pass);
  CHECK(no_gpu_reason(gpu_fact{}) == "no GPU: built without CUDA");
}

TEST_CASE("health core: a node that refuses passes as up unless health.node_port must listen, and no answer fails") {
  reach_fact f;
  f.node = "node-a";
  f.host = "127.0.0.9";
  f.port = 4242;
  f.refused = true;
  CHECK(judge_reach(f).status == check_status::pass);
  f.port_required = true;
  const auto r = judge_reach(f);
  CHECK(r.id == "comm.node.node-a");
  CHECK(r.status == check_status::fail);
  CHECK(r.reason.find("connection refused at 127.0.0.9:4242") != std::string::npos);
  f.refused = false;
  f.error = "no answer within 1000 ms";
  CHECK(judge_reach(f).reason == "cannot reach 127.0.0.9: no answer within 1000 ms");
  f.error.clear();
  f.connected = true;
  CHECK(judge_reach(f).status == check_status::pass);
}

TEST_CASE("health core: checkpoints, memory, limits, clock, ports and governor") {
  checkpoint_fact c;
  CHECK(judge_latest_checkpoint(c).status == check_status::skipped);
  c.root_exists = true;
  c.loaded_step = 20;
  CHECK(judge_latest_checkpoint(c).status == check_status::pass);
  c.refused_keys = {"model.d_model"};
  CHECK(judge_resume_config(c).status == check_status::fail);
  // A damaged newest checkpoint is a warning that names the one a resume loads instead.
  c.refused_keys.clear();
  c.loaded_step = 10;
  c.skipped = {"step-00000020: shard-0.bin: checksum mismatch"};
  const auto fallback = judge_latest_checkpoint(c);
  CHECK(fallback.status == check_status::warn);
  CHECK(fallback.value == "10");
  CHECK(fallback.reason.find("checksum mismatch") != std::string::npos);
  CHECK(fallback.reason.find("resumes from step 10") != std::string::npos);
  CHECK(judge_resume_config(c).status == check_status::pass);
  // None verifies: a resume would start over on top of them, so the start is refused.
  c.loaded_step.reset();
  c.skipped.push_back("step-00000010: manifest.json: No such file or directory");
  const auto none = judge_latest_checkpoint(c);
  CHECK(none.status == check_status::fail);
  CHECK(none.reason.find("no checkpoint verifies") != std::string::npos);
  CHECK(judge_resume_config(c).status == check_status::skipped);
  c.skipped.clear();
  c.verify_error = "cannot list the root: Permission denied";
  CHECK(judge_latest_checkpoint(c).status == check_status::fail);
  CHECK(judge_stale_temps(true, {".tmp-step-10-e1"}).status == check_status::warn);
  CHECK(judge_stale_temps(true, {}).status == check_status::pass);

  memory_fact m;
  m.available_bytes = uint64_t(1) << 30;
  m.per_rank_bytes = uint64_t(600) << 20;
  m.ranks_on_node = 2;
  CHECK(judge_memory(m).status == check_status::fail);
  m.ranks_on_node = 1;
  CHECK(judge_memory(m).status == check_status::pass);
  m.per_rank_bytes = uint64_t(900) << 20;
  CHECK(judge_memory(m).status == check_status::warn);

  CHECK(judge_limit({"host.nofile", "RLIMIT_NOFILE", 1024, 4096, false}).status == check_status::warn);
  CHECK(judge_limit({"host.nofile", "RLIMIT_NOFILE", std::numeric_limits<uint64_t>::max(), 4096, true}).value ==
        "unlimited");
  CHECK(judge_clock({5, 16000000, ""}, 100000).status == check_status::warn);
  CHECK(judge_clock({0, 5000, ""}, 100000).status == check_status::pass);
  CHECK(judge_clock({0, 500000, ""}, 100000).status == check_status::warn);
  // One host: an unsynchronised clock orders nothing wrongly, so the check is skipped, saying why.
  const auto alone = judge_clock({5, 16000000, "", true}, 100000);
  CHECK(alone.status == check_status::skipped);
  CHECK(alone.reason.find("one host") != std::string::npos);
  CHECK(judge_port("host.port.control", "cluster.control_port", 4000, "port 4000 is not free").status ==
        check_status::fail);
  CHECK(judge_port("host.port.control", "cluster.control_port", 0, "").status == check_status::pass);
  CHECK(judge_governor(std::nullopt).status == check_status::skipped);
  CHECK(judge_governor(std::string("powersave")).status == check_status::warn);
}

TEST_CASE("health core: the verdict is the worst status and the JSON has every documented field") {
  health_report r;
  r.node = "n1";
  r.config = "job.toml";
  r.checks.push_back(skipped("comm.nccl", "no GPU: none found"));
  CHECK(verdict(r) == check_status::pass);
  r.checks.push_back(judge_governor(std::string("powersave")));
  CHECK(verdict(r) == check_status::warn);
  r.checks.push_back(judge_problems("config.schema", {"job.toml:3:1: model.x: unknown key"}, ""));
  CHECK(verdict(r) == check_status::fail);
  const auto j = to_json(r);
  CHECK(j["node"] == "n1");
  CHECK(j["verdict"] == "fail");
  CHECK(j["level"] == "quick");
  CHECK(j["config"] == "job.toml");
  REQUIRE(j["checks"].size() == 3);
  for (const char* field : {"id", "status", "value", "threshold", "unit", "reason", "ms"})
    CHECK(j["checks"][2].contains(field));
  CHECK(j["checks"][2]["reason"] == "job.toml:3:1: model.x: unknown key");
  CHECK(render_table(r).find("verdict: fail (0 pass, 1 warn, 1 fail, 1 skipped)") != std::string::npos);
}

TEST_CASE("store.etcd: skipped without a store, a quorum with one raft leader and a granted lease passes, one member down warns") {
  CHECK(judge_store({}).status == check_status::skipped);
  const store_member_fact up_a{"a:1", true, "", "3.4.23", 7}, up_b{"b:1", true, "", "3.4.23", 7},
      down_c{"c:1", false, "c:1: Couldn't connect to server", "", 0};
  store_fact f{"etcd://a:1,b:1,c:1", {up_a, up_b, down_c}, true, ""};
  auto r = judge_store(f);
  CHECK(r.status == check_status::warn);
  CHECK(r.value == "2 of 3 members");
  CHECK(r.reason.find("c:1: Couldn't connect") != std::string::npos);
  f.members[2] = {"c:1", true, "", "3.4.23", 7};
  CHECK(judge_store(f).status == check_status::pass);
  f.members[1].up = f.members[2].up = false;  // 1 of 3: no quorum
  CHECK(judge_store(f).status == check_status::fail);
  store_fact split{"etcd://a:1,b:1", {up_a, {"b:1", true, "", "3.4.23", 9}}, true, ""};
  CHECK(judge_store(split).status == check_status::fail);  // two leaders seen
  store_fact unwritable{"etcd://a:1", {up_a}, false, "etcd at a:1 refused /v3/lease/grant: no space"};
  r = judge_store(unwritable);
  CHECK(r.status == check_status::fail);
  CHECK(r.reason.find("no space") != std::string::npos);
}
