// Reading a Slurm allocation: host lists, repeated counts, the topology/tree switch lines, and
// the allocation from its environment (handed in, so any allocation can be tried).
#include "slurm/slurm_allocation.hpp"
#include "slurm/slurm_hostlist.hpp"
#include "slurm/slurm_topology.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace msomni::slurm;
using strings = std::vector<std::string>;

TEST_CASE("slurm host lists expand as Slurm prints them") {
  CHECK(expand_hostlist("n1") == strings{"n1"});
  CHECK(expand_hostlist("n[1-3]") == strings{"n1", "n2", "n3"});
  CHECK(expand_hostlist("n[1,3]") == strings{"n1", "n3"});
  CHECK(expand_hostlist("gpu[08-10],login") == strings{"gpu08", "gpu09", "gpu10", "login"});
  CHECK(expand_hostlist("r[1-2]n[1-2]") == strings{"r1n1", "r1n2", "r2n1", "r2n2"});
  CHECK(expand_hostlist("").empty());
  CHECK_THROWS_AS(expand_hostlist("n[1-3"), list_error);
  CHECK_THROWS_AS(expand_hostlist("n1]"), list_error);
  CHECK_THROWS_AS(expand_hostlist("n[3-1]"), list_error);
  CHECK_THROWS_AS(expand_hostlist("n[a-b]"), list_error);
  CHECK_THROWS_AS(expand_hostlist("n1,,n2"), list_error);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[1-3"), doctest::Contains("n[1-3"), list_error);
}

TEST_CASE("slurm repeated counts and GPU index lists") {
  CHECK(expand_counts("2(x3),1") == std::vector<int64_t>{2, 2, 2, 1});
  CHECK(expand_counts("4") == std::vector<int64_t>{4});
  CHECK_THROWS_AS(expand_counts("2(3)"), list_error);
  CHECK_THROWS_AS(expand_counts("x"), list_error);
  CHECK(count_index_list("0,1,3") == 3);
  CHECK(count_index_list("0-3") == 4);
  CHECK(count_index_list("") == 0);
}

TEST_CASE("slurm topology/tree: a leaf switch is a rack, its parent the switch") {
  const std::string text =
      "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1,3]\n"
      "SwitchName=s2 Level=0 LinkSpeed=1 Nodes=n2\n"
      "SwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-3] Switches=s[1-2]\n";
  const auto places = parse_topology(text);
  REQUIRE(places.size() == 3);
  CHECK(places.at("n1").rack == "s1");
  CHECK(places.at("n1").switch_name == "top");
  CHECK(places.at("n3").rack == "s1");
  CHECK(places.at("n2").rack == "s2");
  // A leaf with no parent is its own switch; no switch lines, no places.
  const auto flat = parse_topology("SwitchName=leaf Level=0 LinkSpeed=1 Nodes=a,b\n");
  CHECK(flat.at("a").switch_name == "leaf");
  CHECK(parse_topology("").empty());
  CHECK(parse_topology("scontrol: error: No topology information available\n").empty());
  CHECK_THROWS_AS(parse_topology("SwitchName=s1 Level=x Nodes=n1\n"), list_error);
}

namespace {
env_lookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}
}  // namespace

TEST_CASE("slurm allocation: nodes, slots from GPUs else CPUs, places from the topology") {
  CHECK_FALSE(read_allocation(env_of({}), "").has_value());
  const auto cpu = read_allocation(
      env_of({{"SLURM_JOB_ID", "42"}, {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_JOB_CPUS_PER_NODE", "2(x2),4"},
              {"SLURMD_NODENAME", "n1"}}),
      "SwitchName=s1 Level=0 Nodes=n[1-2]\nSwitchName=s2 Level=0 Nodes=n3\n");
  REQUIRE(cpu.has_value());
  CHECK(cpu->job_id == "42");
  CHECK(cpu->this_node == "n1");
  REQUIRE(cpu->nodes.size() == 3);
  CHECK(cpu->nodes[0].slots == 2);
  CHECK(cpu->nodes[2].slots == 4);
  CHECK(cpu->nodes[2].rack == "s2");
  CHECK(cpu->total_slots() == 8);
  CHECK(cpu->topology_known);
  CHECK(cpu->slots_from.find("CPUs") == 0);

  const auto gpu = read_allocation(env_of({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "g[1-2]"},
                                           {"SLURM_JOB_CPUS_PER_NODE", "64(x2)"}, {"SLURM_GPUS_PER_NODE", "a100:8"}}),
                                   "");
  REQUIRE(gpu.has_value());
  CHECK(gpu->nodes[1].slots == 8);
  CHECK(gpu->nodes[1].rack == "rack0");
  CHECK_FALSE(gpu->topology_known);
  const auto ids = read_allocation(env_of({{"SLURM_JOB_ID", "8"}, {"SLURM_JOB_NODELIST", "g1"}, {"SLURM_JOB_GPUS", "0,1"}}), "");
  CHECK(ids->nodes[0].slots == 2);

  // Counts that do not match the nodes, or no node at all: refused, saying why.
  CHECK_THROWS_WITH_AS(read_allocation(env_of({{"SLURM_JOB_ID", "9"}, {"SLURM_JOB_NODELIST", "n[1-3]"},
                                               {"SLURM_JOB_CPUS_PER_NODE", "2(x2)"}}),
                                       ""),
                       doctest::Contains("2 counts for the 3 nodes"), list_error);
  CHECK_THROWS_AS(read_allocation(env_of({{"SLURM_JOB_ID", "9"}}), ""), list_error);
}
