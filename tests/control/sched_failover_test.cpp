// msomni-sched on a control store with a standby, as real processes over UCX on loopback with
// a real etcd: the leading instance is SIGKILLed under a running job and a job waiting in line.
// The standby takes over within its lease, writes the shared info file anew, and the jobs
// follow it: the running job is adopted on its GPUs (its command never restarted), the job
// in line keeps its place ahead of one submitted after the takeover, and no GPU is given
// twice. The store holds the decisions of both terms. Instances with other settings are
// refused, and the store flags are refused without --store.
#include "support/etcd_servers.hpp"
#include "support/process_runner.hpp"

#include "control_keys.hpp"
#include "store/etcd_client.hpp"

#include "core/child_process.hpp"

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>
#include <signal.h>

#include <set>
#include <thread>

using namespace msomni;
using namespace std::chrono_literals;
using msomni::child_process;
using msomni::testing::run_command;
using msomni::testing::temp_dir;
using json = nlohmann::json;

namespace {

std::unique_ptr<child_process> start_instance(const temp_dir& dir, const std::string& store,
                                              std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"--gpus",        "8", "--info-file", (dir.path() / "info").string(), "--store", store,
                                "--lease-ttl-s", "3", "--name",      "test-cluster",   "--min-run-window-s", "0",
                                "--recover-s",   "3"};
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<child_process>(MSOMNI_SCHED_BINARY, args);
}

}  // namespace

TEST_CASE("msomni-sched with a standby: the leader SIGKILLed, the standby takes over, running jobs keep their GPUs, the queue keeps its order") {
  testing::etcd_servers etcd;
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  const std::string info = (dir.path() / "info").string();
  auto first = start_instance(dir, etcd.url());
  REQUIRE_MESSAGE(first->read_until("msomni-sched: 8 GPUs", 30s), first->log);
  CHECK(first->log.find("leading the service \"test-cluster\"") != std::string::npos);
  auto standby = start_instance(dir, etcd.url());
  REQUIRE_MESSAGE(standby->read_until("msomni-sched: standby: ", 30s), standby->log);

  child_process reg(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "reg", "--class", "regular", "--gpus",
                                        "8", "--reconnect-s", "60", "--", "sh", "-c", "sleep 12; echo reg-done"});
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: started on gpus 0,1,2,3,4,5,6,7", 20s), reg.log);
  child_process early(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "early", "--class", "regular",
                                          "--gpus", "8", "--reconnect-s", "60", "--", "sh", "-c", "echo early-ran"});
  REQUIRE_MESSAGE(early.read_until("msomni job early: submitted", 20s), early.log);
  std::this_thread::sleep_for(1s);
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(first->pid(), SIGKILL);
  first->wait(10s);
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: the scheduler went away: the command keeps running", 20s), reg.log);
  // The standby: elected once the lease ran out, in recovery while the jobs rejoin.
  REQUIRE_MESSAGE(standby->read_until("msomni-sched: leading the service", 30s), standby->log);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed_at);
  MESSAGE("the standby leads " << took.count() << " ms after the leader's SIGKILL (lease 3 s)");
  REQUIRE_MESSAGE(standby->read_until("msomni-sched: restarted (took over from ", 20s), standby->log);
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: keeps gpus 0,1,2,3,4,5,6,7", 20s), reg.log);
  child_process next(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "next", "--class", "regular", "--gpus",
                                         "8", "--", "sh", "-c", "echo next-ran"});
  REQUIRE_MESSAGE(early.read_until("msomni job early: submitted again to the restarted scheduler", 20s), early.log);
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: finished", 40s), reg.log);
  CHECK(reg.wait(10s) == 0);
  CHECK(reg.log.find("reg-done") != std::string::npos);  // the command ran through the takeover
  REQUIRE_MESSAGE(next.read_until("msomni job next: finished", 30s), next.log);
  CHECK(next.wait(10s) == 0);
  CHECK(early.wait(10s) == 0);
  ::kill(standby->pid(), SIGTERM);
  CHECK(standby->read_until("msomni-sched: stopped", 20s));
  CHECK(standby->wait(10s) == 0);
  CAPTURE(standby->log);
  const auto adopted = standby->log.find("adopted reg gpus=8");
  const auto early_start = standby->log.find("start early gpus=8"), next_start = standby->log.find("start next gpus=8");
  CHECK(adopted != std::string::npos);
  REQUIRE(early_start != std::string::npos);
  REQUIRE(next_start != std::string::npos);
  CHECK(early_start > adopted);  // nothing placed on reg's GPUs while it held them
  CHECK(early_start < next_start);  // its place in line survived the takeover
  CHECK(standby->log.find("start reg") == std::string::npos);  // reg was never started again

  // The store: both terms' decisions in the service's event log, the second leader's after
  // the first's, and no leader left after the clean stop.
  store::etcd_client admin(etcd.endpoints(), 2000ms);
  const control::job_keys keys("sched-test-cluster");
  std::map<int64_t, std::set<std::string>> by_term;  // term -> "decision job"
  for (const auto& kv : admin.get_prefix(keys.events())) {
    const auto e = json::parse(kv.value);
    by_term[e.value("term", int64_t{0})].insert(e.value("decision", "") + " " + e.value("job", ""));
  }
  REQUIRE(by_term.size() == 2);
  CHECK(by_term.begin()->second.count("start reg") == 1);
  CHECK(by_term.rbegin()->second.count("adopted reg") == 1);
  CHECK(by_term.rbegin()->second.count("start early") == 1);
  CHECK_FALSE(admin.get(keys.leader()).has_value());
}

TEST_CASE("msomni-sched with a store: another instance with other settings is refused, the store flags need --store") {
  testing::etcd_servers etcd;
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  auto first = start_instance(dir, etcd.url());
  REQUIRE_MESSAGE(first->read_until("msomni-sched: 8 GPUs", 30s), first->log);
  ::kill(first->pid(), SIGKILL);
  first->wait(10s);
  // A different policy for the same service: refused before anything starts.
  const auto other = run_command(std::string(MSOMNI_SCHED_BINARY) + " --gpus 8 --info-file " + (dir.path() / "info").string() +
                                 " --store " + etcd.url() + " --lease-ttl-s 3 --name test-cluster --min-run-window-s 0" +
                                 " --recover-s 3 --idle-threshold 0.5");
  CHECK(other.exit_code == 2);
  CHECK_MESSAGE(other.output.find("runs with other settings") != std::string::npos, other.output);
  const auto r = run_command(std::string(MSOMNI_SCHED_BINARY) + " --name x --info-file " +
                             (dir.path() / "i2").string());
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.output.find("--store") != std::string::npos, r.output);
  const auto bad = run_command(std::string(MSOMNI_SCHED_BINARY) + " --store http://x:1 --info-file " +
                               (dir.path() / "i3").string());
  CHECK(bad.exit_code == 2);
}
