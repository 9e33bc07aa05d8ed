// The orchestrator shell's state and the parts of its behaviour, one file per purpose:
//   orchestrator_actor.cpp     the behaviour: each message to the function that takes it
//   orchestrator_journal.cpp   event lines, the inspector's timeline, pushed metrics reports
//   orchestrator_execute.cpp   carries out the elastic core's actions, the job's end
//   rank_process.cpp           whether a pid is a given rank's process, and its kill
//   orchestrator_steps.cpp     step records, checkpoints, memory fit and advice
//   orchestrator_judging.cpp   training health and autoscale on each journaled step
//   orchestrator_replies.cpp   status, inspect and the control verbs
//   orchestrator_members.cpp   agents and ranks arriving, leaving and dying
//   orchestrator_tick.cpp      the tick: pauses, stops (stop_precedence), node release
//   orchestrator_preflight.cpp the pre-flight of the agents' nodes (node_check_core)
// Private to the shell: spawn_orchestrator (orchestrator_actor.hpp) is its interface.
#pragma once

#include "orchestrator_actor.hpp"

#include "bad_sample_ledger.hpp"
#include "control_metrics.hpp"
#include "data_watch.hpp"
#include "memory_journal.hpp"
#include "orchestrator_json.hpp"
#include "progress_core.hpp"
#include "record_lineage.hpp"
#include "stop_precedence.hpp"
#include "messages/catalog.hpp"
#include "metrics/accounted_actor.hpp"

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/atom.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace msomni::orchestrator::shell {

using tick_atom = caf::atom_constant<caf::atom("otick")>;
using gather_deadline_atom = caf::atom_constant<caf::atom("ogather")>;  // the node check's gather deadline

// What the orchestrator takes: its interface plus its own timers.
using orchestrator_impl =
    msg::orchestrator_actor::extend<caf::reacts_to<tick_atom>, caf::reacts_to<gather_deadline_atom>>;
using actor = metrics::accounted<orchestrator_impl::base>*;

constexpr auto tick_interval = std::chrono::milliseconds(200);
// Advice lines the journal takes from the memory watermark predictor; later ones are counted
// in msomni_memory_advice_total only.
constexpr uint64_t memory_advice_journaled_max = 1000;
// Replayed memory fit decisions sent to one rank before a plan (the rank's inbox holds as many).
constexpr size_t memory_fit_replay_max = 1024;
constexpr size_t timeline_capacity = 200;
constexpr size_t memory_events_capacity = 20;

struct shell_state {
  shell_state(elastic_settings s, orchestrator_env e);
  elastic_core core;
  progress_core progress;
  bad_sample_ledger bad_ledger;  // which samples were bad, as the ranks say
  data_watch data;
  training_health health;
  autoscale_core autoscale;
  run_tally tally;  // what summary.json says about this run
  uint64_t autoscale_epoch = 0;  // a new epoch is a resize: the autoscale windows start over
  orchestrator_env env;
  real_clock clock;
  std::optional<time_point> last_tick;  // when the tick ran last: a long gap is this process's own pause
  std::map<std::string, msg::worker_actor> workers;  // rank name -> its worker actor
  std::map<std::string, msg::agent_actor> agents;    // node -> agent actor
  std::map<caf::actor_addr, std::pair<bool, std::string>> watched;  // (is_agent, name)
  bool done = false;
  stop_precedence stops;  // which stop wins, and whether one was sent
  uint64_t memory_advice_seen = 0;  // from the memory watermark predictor
  std::set<std::string> release_tried;  // nodes offered back to the cluster's engine, once each
  record_lineage lineage;  // which step records around a rollback are the state's own
  std::unique_ptr<control_metrics> control;  // null: metrics off
  // The newest journaled events, for `msomni inspect`'s elastic timeline (bounded).
  std::deque<ordered_json> timeline;
  // The newest memory_advice and memory_fit events, for `msomni inspect`'s memory view: apart
  // from the timeline, which a run of fits every step would otherwise fill (bounded).
  std::deque<ordered_json> memory_events;
  std::map<std::string, uint64_t> refused_reports;  // per source, for logging the first of each
  std::unique_ptr<memory_hook> memory;  // the ranks' memory samples (memory_journal.hpp)
  // The agents' pre-flight (node_preflight): null when the agents go to the core at once.
  std::optional<node_preflight> preflight;
  std::unique_ptr<health::node_check_core> node_checks;
  std::map<std::string, msg::agent_hello> held_agents;  // joined, not admitted yet
  bool preflight_failed = false;
  // How long after the first agent the initial node check waits for the other listed nodes
  // (elastic_settings::agent_gather, what placement waits too); armed once.
  nanos agent_gather;
  bool gather_armed = false;
};
using state_ptr = std::shared_ptr<shell_state>;

// orchestrator_journal.cpp
void journal(shell_state& st, const std::string& kind, const std::string& detail, const std::string& rank = {},
             const std::string& node = {}, const std::vector<std::pair<std::string, int64_t>>& numbers = {});
void stop_if_journal_failed(actor self, shell_state& st);
void remember_memory_event(shell_state& st, const char* kind, const std::string& detail, uint64_t step,
                           const std::string& rank);
void take_report(shell_state& st, const msg::metrics_report& r);
void forget_departed_sources(shell_state& st);

// orchestrator_execute.cpp
void execute(actor self, shell_state& st, std::vector<action> acts);

// orchestrator_steps.cpp
void on_step_record(actor self, shell_state& st, msg::step_record r);
void journal_step(actor self, shell_state& st, const msg::step_record& r);
void on_checkpoint_done(shell_state& st, const msg::checkpoint_done& d);
void on_memory_sample(actor self, shell_state& st, const msg::memory_sample& s);
void on_memory_fit_done(shell_state& st, const msg::memory_fit_done& d);
void on_memory_advice(shell_state& st, const msg::memory_advice& a);
void count_fit(shell_state& st, const char* result);

// orchestrator_judging.cpp
void judge_health(actor self, shell_state& st, const msg::step_record& r, time_point now);
void judge_utilisation(actor self, shell_state& st, const msg::step_record& r, time_point now);
std::string health_summary(const shell_state& st);

// orchestrator_replies.cpp
msg::control_reply handle_control(actor self, shell_state& st, const msg::control_request& r);

// orchestrator_members.cpp
void on_agent_hello(actor self, const state_ptr& st, const msg::agent_hello& a);
void on_agent_signalled(actor self, shell_state& st, const msg::agent_signalled& a);
void on_rank_ready(actor self, shell_state& st, const msg::rank_ready& r);
void on_rank_rejoin(actor self, shell_state& st, const msg::rank_rejoin& r);
void on_rank_left(actor self, shell_state& st, const msg::rank_left& r);
void on_rank_exited(actor self, shell_state& st, const msg::rank_exited& r);
void on_down(actor self, shell_state& st, const caf::down_msg& d);

// orchestrator_tick.cpp
void on_tick(actor self, shell_state& st);

// orchestrator_preflight.cpp
void admit_agent(actor self, shell_state& st, const msg::agent_hello& a);
void run_node_checks(actor self, const state_ptr& st, std::vector<health::node_checks::action> acts);
void on_gather_deadline(actor self, const state_ptr& st);

}  // namespace msomni::orchestrator::shell
