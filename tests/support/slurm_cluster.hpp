// A real Slurm cluster on this machine for tests: munged with its own key and socket,
// slurmctld and one slurmd per node (Slurm runs several nodes on one host: `slurmd -N NAME`,
// each with its own Port= and spool directory), all in the foreground as our children, on free
// loopback ports, configured by a slurm.conf (and topology.conf, when switches are given) in a
// temporary directory. SLURM_CONF points the client commands (sbatch, squeue, scontrol) at it
// while it lives. Going, it cancels every job, waits for them to leave, stops the daemons
// (SIGTERM, then SIGKILL), ends any slurmstepd left and removes its directory.
//
// Needs root (slurmd starts jobs as their user) and the slurm-wlm and munge packages:
// unavailable() says which is missing, for the test to skip with that reason.
#pragma once

#include "support/free_port.hpp"
#include "support/process_runner.hpp"

#include "core/process.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace msomni::testing {

struct slurm_node_spec {
  std::string name;
  int cpus = 1;
};

class slurm_cluster {
 public:
  // Why no cluster can run here ("" when one can).
  static std::string unavailable() {
    if (::geteuid() != 0) return "a Slurm test cluster needs root (slurmd runs jobs as their users)";
    for (const char* p : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sbatch"})
      if (!std::filesystem::exists(p)) return std::string(p) + " is missing (Debian packages slurm-wlm and munge)";
    return {};
  }

  // `switches`: leaf switch -> its nodes (a topology.conf of those switches under one top
  // switch); empty: no topology plugin. `preemption`: two partitions on every node, "low"
  // (the default) preempted by "high" with PreemptMode=REQUEUE and GraceTime of that many
  // seconds; 0: one partition, "test", and no preemption.
  explicit slurm_cluster(std::vector<slurm_node_spec> nodes,
                         std::map<std::string, std::vector<std::string>> switches = {}, int preemption = 0)
      : nodes_(std::move(nodes)) {
    const auto d = dir_.path();
    std::filesystem::create_directories(d / "spool");
    std::filesystem::create_directories(d / "state");
    // munge: a key of our own (0600, ours), its socket here.
    {
      std::random_device rd;
      std::string key(1024, '\0');
      for (auto& c : key) c = static_cast<char>(rd());
      const auto key_path = d / "munge.key";
      std::ofstream(key_path, std::ios::binary) << key;
      std::filesystem::permissions(key_path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    }
    socket_ = (d / "munge.sock").string();
    munged_ = start("/usr/sbin/munged", {"--foreground", "--force", "--socket=" + socket_,
                                         "--key-file=" + (d / "munge.key").string(),
                                         "--log-file=" + (d / "munged.log").string(),
                                         "--pid-file=" + (d / "munged.pid").string(),
                                         "--seed-file=" + (d / "munge.seed").string()},
                    "munged-stdout.log");
    for (int i = 0; i < 100 && !std::filesystem::exists(socket_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    ctld_port_ = free_loopback_port();
    std::ofstream conf(d / "slurm.conf");
    conf << "ClusterName=msomnitest\n"
         << "SlurmctldHost=" << host << "(127.0.0.1)\n"
         << "SlurmctldPort=" << ctld_port_ << "\n"
         << "SlurmUser=root\nAuthType=auth/munge\nCredType=cred/munge\n"
         << "AuthInfo=socket=" << socket_ << "\n"
         << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
         << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
         << "StateSaveLocation=" << (d / "state").string() << "\n"
         << "SlurmdSpoolDir=" << (d / "spool").string() << "/%n\n"
         << "SlurmdPidFile=" << d.string() << "/slurmd-%n.pid\n"
         << "SlurmctldPidFile=" << d.string() << "/slurmctld.pid\n"
         << "SlurmctldLogFile=" << d.string() << "/slurmctld.log\n"
         << "SlurmdLogFile=" << d.string() << "/slurmd-%n.log\n"
         << "ReturnToService=2\nMpiDefault=none\nJobRequeue=1\nKillWait=5\n"
         << "SlurmctldTimeout=10\nSlurmdTimeout=10\nInactiveLimit=0\nMinJobAge=600\n"
         << "SchedulerType=sched/builtin\n";
    if (!switches.empty()) conf << "TopologyPlugin=topology/tree\n";
    std::string all;
    for (const auto& n : nodes_) {
      const auto port = free_loopback_port();
      conf << "NodeName=" << n.name << " NodeHostname=" << host << " NodeAddr=127.0.0.1 Port=" << port
           << " CPUs=" << n.cpus << " State=UNKNOWN\n";
      all += (all.empty() ? "" : ",") + n.name;
    }
    if (preemption > 0)
      conf << "PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\n"
           << "PartitionName=low Nodes=" << all << " Default=YES MaxTime=INFINITE State=UP PriorityTier=1 GraceTime="
           << preemption << "\n"
           << "PartitionName=high Nodes=" << all << " MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF\n";
    else
      conf << "PartitionName=test Nodes=" << all << " Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO\n";
    conf.close();
    if (!switches.empty()) {
      std::ofstream topo(d / "topology.conf");
      std::string leaves;
      for (const auto& [sw, members] : switches) {
        std::string list;
        for (const auto& m : members) list += (list.empty() ? "" : ",") + m;
        topo << "SwitchName=" << sw << " Nodes=" << list << "\n";
        leaves += (leaves.empty() ? "" : ",") + sw;
      }
      topo << "SwitchName=top Switches=" << leaves << "\n";
    }
    conf_ = (d / "slurm.conf").string();
    ::setenv("SLURM_CONF", conf_.c_str(), 1);
    ctld_ = start("/usr/sbin/slurmctld", {"-D", "-f", conf_}, "slurmctld-stdout.log");
    for (const auto& n : nodes_) slurmd_.push_back(start("/usr/sbin/slurmd", {"-D", "-f", conf_, "-N", n.name},
                                                         "slurmd-" + n.name + "-stdout.log"));
  }

  ~slurm_cluster() {
    run_command("scancel --full --signal=KILL --user=root >/dev/null 2>&1; scancel --user=root >/dev/null 2>&1");
    for (int i = 0; i < 60 && !run_command("squeue -h -t R,CG,S -o %i").output.empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    for (auto& d : slurmd_) stop(d);
    stop(ctld_);
    stop(munged_);
    // A job step whose slurmd went first: nothing of this cluster stays.
    run_command("pkill -KILL -x slurmstepd >/dev/null 2>&1");
    ::unsetenv("SLURM_CONF");
  }
  slurm_cluster(const slurm_cluster&) = delete;
  slurm_cluster& operator=(const slurm_cluster&) = delete;

  // Every node idle (slurmctld answers and each slurmd registered) within `within`.
  bool wait_ready(std::chrono::seconds within = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto r = run_command("sinfo -h -N -o '%N %t'");
      size_t idle = 0;
      for (const auto& n : nodes_)
        if (r.output.find(n.name + " idle") != std::string::npos) ++idle;
      if (r.exit_code == 0 && idle == nodes_.size()) return true;
      if (ctld_.poll()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return false;
  }

  const std::filesystem::path& dir() const { return dir_.path(); }
  std::string log(const std::string& name) const { return read_text(dir_.path() / name); }
  // slurmctld's log and every slurmd's, for a failure message.
  std::string logs() const {
    std::string out = "---- slurmctld.log\n" + log("slurmctld.log");
    for (const auto& n : nodes_) out += "---- slurmd-" + n.name + ".log\n" + log("slurmd-" + n.name + ".log");
    return out;
  }

 private:
  process::child start(const std::string& program, const std::vector<std::string>& args, const std::string& out) {
    process::spawn_options o;
    o.in = process::stream::null();
    o.out = process::stream::file((dir_.path() / out).string());
    o.err = process::stream::same_as_stdout();
    o.parent_death_signal = SIGKILL;
    return process::spawn(program, args, o);
  }
  static void stop(process::child& c) {
    c.signal(SIGTERM);
    if (!c.wait_for(std::chrono::seconds(15))) c.signal(SIGKILL);
    c.wait();
  }

  temp_dir dir_;
  std::vector<slurm_node_spec> nodes_;
  std::string socket_, conf_;
  uint16_t ctld_port_ = 0;
  process::child munged_, ctld_;
  std::vector<process::child> slurmd_;
};

}  // namespace msomni::testing
