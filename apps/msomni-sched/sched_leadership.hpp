// msomni-sched with a control store (--store): several instances of one service (same --name)
// campaign for its leadership on an etcd lease, as msomni-run's control processes do for a
// job (docs/control_failover.md). The leader serves; the others wait and take over when its
// lease runs out. A leader taking over writes the shared info file anew (address and token),
// which every `msomni job` follows, and places nothing for --recover-s seconds while the
// running jobs rejoin on their GPUs. The store keeps the leader's record (its address) and
// every decision, fenced by its term; the jobs themselves hold what runs where.
#pragma once

#include "control_leadership.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace msomni::apps {

struct sched_store_options {
  std::string store;     // etcd://HOST:PORT[,...]
  std::string name;      // the service's name: its keys are /msomni/jobs/sched-NAME/
  int64_t lease_ttl_s = 5;
  std::string info_file;
  std::map<std::string, std::string> settings;  // what every instance of the service must share
};

struct sched_leader {
  std::unique_ptr<control::control_leadership> leadership;
  bool took_over = false;   // an earlier leader served this service: its jobs will rejoin
  std::string previous;     // that leader's id
  int64_t term = 0;
  std::atomic<bool> deposed{false};
};

// Campaigns until elected (the result), or returns the exit code: 0 stopped while standing
// by, 1 the store did not answer, 2 another instance of the service runs other settings.
// Lines for the operator go to stdout (standing by, elected) and stderr (refusals).
std::variant<std::unique_ptr<sched_leader>, int> lead_scheduler(const sched_store_options& o);

}  // namespace msomni::apps
