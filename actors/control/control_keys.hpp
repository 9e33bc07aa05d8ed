// Where a job's control state lives in the store, and the records kept there. Every key of
// a job sits under "/msomni/jobs/<job.name>/":
//
//   leader           the leader's record (leader_record), on its lease; its create revision
//                    is the leader's term, and every commit of that leader compares it
//   standbys/<id>    each waiting control process, on its own lease
//   state            the job's state (job_state), replaced by each commit
//   events/<seq>     the event log: every journal event of every term, seq 12 digits from 1,
//                    the oldest removed past event_log_max
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace msomni::control {

// The event log keeps this many events per job in the store (events.jsonl keeps them all).
inline constexpr uint64_t event_log_max = 20'000;

struct job_keys {
  std::string prefix;  // "/msomni/jobs/<job>/"
  explicit job_keys(const std::string& job) : prefix("/msomni/jobs/" + job + "/") {}
  std::string leader() const { return prefix + "leader"; }
  std::string standbys() const { return prefix + "standbys/"; }
  std::string standby(const std::string& id) const { return standbys() + id; }
  std::string state() const { return prefix + "state"; }
  std::string events() const { return prefix + "events/"; }
  std::string event(uint64_t seq) const;
};

struct leader_record {
  std::string id;       // "HOST:PID"
  std::string host;
  int64_t pid = 0;
  std::string run_dir;
  std::string address;  // the control process's UCX address once it serves ("" before)
  std::string metrics_address;
  int64_t since_ms = 0;  // unix ms it became leader (or started standing by)
  int64_t ttl_s = 0;
  nlohmann::ordered_json to_json() const;
  static leader_record from_json(const std::string& text);  // fields it lacks stay empty
};

struct job_state {
  std::string phase;  // running | finished | failed | stopped | preempted | deposed
  int64_t term = 0;   // the leader that wrote it
  std::string leader;
  std::string fingerprint;
  uint64_t next_event = 1;
  uint64_t epoch = 0;
  uint64_t step = 0;
  uint64_t attempt = 0;
  int64_t updated_ms = 0;
  uint64_t recoveries = 0;  // recoveries from lost members spent so far, by every term
  int64_t replicas = 0;     // the replicas of the last completed resize; 0: none (the config's)
  nlohmann::ordered_json to_json() const;
  static job_state from_json(const std::string& text);
};

}  // namespace msomni::control
