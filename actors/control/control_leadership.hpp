// The control process's side of leadership over etcd: it campaigns for the job's leader key
// on a lease, and once elected a thread of its own renews the lease, commits the job's state
// and event log through transactions fenced by the leader's term, and steps down (calling
// on_deposed once) when leadership_core says the lease may be gone or a fence refuses a
// commit. The decisions are leadership_core's; this class only talks to the store.
//
// Bounds: the event queue holds queue_max lines (more are dropped and counted); a campaign
// the store does not answer retries with a backoff (the renewal interval, doubled after each
// silent attempt up to the lease's TTL) for as long as the job's ranks train on without a
// leader (leaderless_limit_s of the TTL, control_file.hpp), so that the job has a leader
// again when the store comes back within that time, and gives up after it; every request is
// bounded by the client's timeout.
#pragma once

#include "control_keys.hpp"
#include "leadership_core.hpp"
#include "store/etcd_client.hpp"

#include "core/clock.hpp"
#include "metrics/metrics_registry.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace msomni::control {

inline constexpr size_t queue_max = 4096;
// How long a campaign keeps trying while the store does not answer: as long as the ranks of a
// job with a lease of `ttl` train on without a leader.
nanos campaign_patience(nanos ttl);
// The wait before the next attempt after `silent` attempts in a row the store did not answer.
nanos campaign_backoff(nanos renew_interval, nanos ttl, int silent);

struct leadership_options {
  std::vector<std::string> endpoints;  // "HOST:PORT" of each etcd member
  std::string job;                     // job.name: the job's key prefix
  std::string fingerprint;             // the configuration, as config_fingerprint says
  std::string run_dir;
  nanos ttl{std::chrono::seconds(5)};
  // A leader deposed when its lease ran out stands again with this set: another process
  // leading the job ends its campaign (`yielded`) instead of making it a standby.
  bool yield_to_another_leader = false;
};

struct election {
  bool elected = false;       // false: stopped, or the store never answered (`problem`)
  takeover what = takeover::start;
  job_state previous;         // the job's state as the store had it before this term
  leader_record previous_leader;  // the last leader this process saw lead (empty: none)
  int64_t term = 0;
  nanos waited{0};            // from the previous leader's last sight to this election
  std::string problem;
  bool yielded = false;       // yield_to_another_leader: previous_leader leads the job
};

// What `msomni status` shows of the control plane, read from the store.
struct control_view {
  bool has_leader = false;
  int64_t term = 0;           // the leader key's create revision
  int64_t lease_left_s = 0;   // the leader's lease as the store counts it
  leader_record leader;
  std::vector<leader_record> standbys;
  job_state state;
  std::vector<store::member_status> members;
  std::string error;          // the store did not answer (members then says who did)
  nlohmann::ordered_json to_json() const;
  std::string to_text() const;
};
control_view read_control_view(const std::vector<std::string>& endpoints, const std::string& job);

class control_leadership {
 public:
  explicit control_leadership(leadership_options o);
  ~control_leadership();  // stops the thread; a leader that still leads resigns (revokes its lease)
  control_leadership(const control_leadership&) = delete;
  control_leadership& operator=(const control_leadership&) = delete;

  // Campaigns every renewal interval until this process leads or `stop` is set; `say` gets
  // a line each time the leader it waits behind changes.
  election campaign(const std::atomic<bool>& stop, const std::function<void(const std::string&)>& say);

  // Once elected: starts the thread. on_deposed is called once, from that thread.
  void serve(std::function<void(const std::string& why)> on_deposed);
  // The leader record names where this process serves (agents, ranks and the CLI find it).
  void announce(const std::string& control_address, const std::string& metrics_address);
  // One journal event line for the store's event log (from the journal's observer).
  void record_event(const nlohmann::ordered_json& line);
  // Commits the job's final phase and waits (a lease TTL at most) for the queue to drain;
  // false when it could not (deposed, or the store did not answer in time).
  bool finish(const std::string& phase);
  void attach_metrics(metrics::metrics_registry& registry);

  bool leading() const;
  // Deposed because another leader's term fenced a commit (not because the lease ran out).
  bool deposed_by_fence() const;
  int64_t term() const;
  const std::string& id() const { return me_.id; }

 private:
  struct entry {
    std::string line;
    uint64_t epoch = 0, step = 0, attempt = 0, recoveries = 0;
    int64_t replicas = 0;  // a completed resize's replicas; 0: the line has none
    bool has_epoch = false, has_step = false;
  };
  void run();
  bool commit_some(std::unique_lock<std::mutex>& lock);
  void renew(std::unique_lock<std::mutex>& lock);
  store::txn_result fenced(const std::vector<store::operation>& ops);
  void refresh_metrics(time_point now);

  leadership_options o_;
  job_keys keys_;
  leader_record me_;
  real_clock clock_;
  std::unique_ptr<store::etcd_client> client_;  // used by campaign, then by the thread alone
  leadership_core core_;
  int64_t lease_ = 0;
  bool deposition_reported_ = false;  // on_deposed has returned (finish() waits for it)
  job_state state_;
  std::string final_phase_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<entry> queue_;
  bool announce_pending_ = false;
  bool stop_ = false;
  std::function<void(const std::string&)> on_deposed_;
  std::thread thread_;
  metrics::metrics_registry* metrics_ = nullptr;
  uint64_t failovers_counted_ = 0;
};

// The configuration's identity for a takeover: its resolved values except the keys that may
// differ between the hosts of one job's control processes (where each listens, the store).
std::string config_fingerprint(const std::map<std::string, std::string>& resolved_values);

}  // namespace msomni::control

namespace msomni::control {
// The control series of a job without a store: its one control process always leads.
void embedded_control_series(metrics::metrics_registry& registry);
}  // namespace msomni::control
